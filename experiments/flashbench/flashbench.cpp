// flashbench: times the recurrent op's backends against the baselines libtorch
// reaches (the vanilla loop, cuDNN's LSTM/GRU for a dense single head, causal
// attention through SDPA) in one process on one GPU. Every case is checked
// against the float64 vanilla backend before it is timed.
//
//   flashbench [--sweep heads|batch|length|all] [--cells lstm,slstm,gru,elman]
//              [--backends alternating,fused,vanilla] [--baselines on|off]
//              [--dtype bf16|fp16|fp32] [--iters 20] [--out results.json]
//              [--shape B,T,N,D] [--breakdown on|off] [--check on|off]
// --shape times one shape instead of a sweep; --breakdown adds the pass
// "fw_train", the forward with autograd recording (the backward's share is
// fwbw - fw_train); --check off skips the float64 check (for profilers, which
// would otherwise trace the reference's thousands of small kernels).
//
// Timing: CUDA events around each repetition after warm-up, the median over
// repetitions, inputs rotated among several sets so the L2 does not serve repeats.
#include <algorithm>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>

#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "flashrnn/flashrnn.h"

namespace {

using flashrnn::Backend;
using flashrnn::Cell;
using Json = nlohmann::json;

struct Args {
  std::string sweep = "all";
  std::vector<std::string> cells = {"lstm", "slstm", "gru", "elman"};
  std::vector<std::string> backends = {"alternating", "fused", "vanilla"};
  bool baselines = true;  // cuDNN and SDPA
  torch::Dtype dtype = torch::kBFloat16;
  int iters = 20;
  std::string out = "flashbench.json";
  std::string shape;       // "B,T,N,D": this shape only
  bool breakdown = false;  // also time the recording forward
  bool check = true;       // float64 check before timing
};

struct Shape {
  int64_t B, T, N, D;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> parts;
  std::stringstream in(s);
  for (std::string p; std::getline(in, p, ',');) parts.push_back(p);
  return parts;
}

[[noreturn]] void usage(const std::string& problem) {
  std::cerr << "flashbench: " << problem << "\nusage: flashbench [--sweep heads|batch|length|all]"
            << " [--cells lstm,slstm,gru,elman] [--backends alternating,fused,vanilla]"
            << " [--baselines on|off] [--dtype bf16|fp16|fp32] [--iters N] [--out FILE]"
            << " [--shape B,T,N,D] [--breakdown on|off] [--check on|off]\n";
  std::exit(2);
}

bool on_off(const std::string& key, const std::string& value) {
  if (value != "on" && value != "off") usage(key + " takes on or off, not " + value);
  return value == "on";
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string key = argv[i];
    if (i + 1 >= argc) usage("missing value after " + key);
    const std::string value = argv[++i];
    if (key == "--sweep") a.sweep = value;
    else if (key == "--cells") a.cells = split(value);
    else if (key == "--backends") a.backends = split(value);
    else if (key == "--baselines") a.baselines = on_off(key, value);
    else if (key == "--breakdown") a.breakdown = on_off(key, value);
    else if (key == "--check") a.check = on_off(key, value);
    else if (key == "--shape") a.shape = value;
    else if (key == "--iters") a.iters = std::stoi(value);
    else if (key == "--out") a.out = value;
    else if (key == "--dtype") {
      if (value == "bf16") a.dtype = torch::kBFloat16;
      else if (value == "fp16") a.dtype = torch::kHalf;
      else if (value == "fp32") a.dtype = torch::kFloat;
      else usage("unknown dtype " + value);
    } else usage("unknown option " + key);
  }
  return a;
}

std::string dtype_name(torch::Dtype t) {
  return t == torch::kBFloat16 ? "bf16" : t == torch::kHalf ? "fp16" : "fp32";
}

// The paper's sweeps (FlashRNN section 5): head dims at B=16, T=1024; batch
// sizes at 12×64 and 1×768; sequence lengths at 12×64.
std::vector<Shape> sweep_shapes(const std::string& sweep, const std::string& shape) {
  std::vector<Shape> shapes;
  if (!shape.empty()) {
    const std::vector<std::string> parts = split(shape);
    if (parts.size() != 4) usage("--shape takes B,T,N,D, not " + shape);
    Shape one{};
    int64_t* fields[] = {&one.B, &one.T, &one.N, &one.D};
    for (int i = 0; i < 4; ++i) {
      try {
        *fields[i] = std::stoll(parts[i]);
      } catch (const std::exception&) {
        usage("--shape takes four integers B,T,N,D, not " + shape);
      }
      if (*fields[i] < 1) usage("--shape values must be >= 1: " + shape);
    }
    return {one};
  }
  if (sweep == "heads" || sweep == "all")
    for (auto [D, N] : {std::pair{16, 48}, {32, 24}, {64, 12}, {128, 6}, {256, 3}, {768, 1}})
      shapes.push_back({16, 1024, N, D});
  if (sweep == "batch" || sweep == "all")
    for (int64_t B : {2, 8, 32, 64, 128, 256})  // 16 is in the head sweep
      for (auto [D, N] : {std::pair{64, 12}, {768, 1}}) shapes.push_back({B, 1024, N, D});
  if (sweep == "length" || sweep == "all")
    for (int64_t T : {256, 512, 2048}) shapes.push_back({16, T, 12, 64});
  if (shapes.empty()) usage("unknown sweep " + sweep);
  return shapes;
}

// Median milliseconds of fn(i) over `iters` repetitions after warm-up.
double median_ms(const std::function<void(int)>& fn, int iters) {
  for (int i = 0; i < 3; ++i) fn(i);
  std::vector<double> ms;
  for (int i = 0; i < iters; ++i) {
    at::cuda::CUDAEvent start(cudaEventDefault), stop(cudaEventDefault);
    start.record();
    fn(i);
    stop.record();
    stop.synchronize();
    ms.push_back(start.elapsed_time(stop));
  }
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  return ms[ms.size() / 2];
}

constexpr int kInputSets = 4;  // rotated so repeats do not hit the L2

struct OpInputs {
  torch::Tensor wx, r, b;
};

OpInputs make_inputs(Cell cell, const Shape& s, torch::Dtype dtype, bool grad) {
  const auto layout = flashrnn::cell_layout(cell);
  const auto o = torch::TensorOptions().device(torch::kCUDA).dtype(dtype);
  OpInputs in{torch::randn({s.B, s.T, layout.gates, s.N, s.D}, o),
              torch::randn({layout.gates, s.N, s.D, s.D}, o) / std::sqrt(double(s.D)),
              torch::randn({layout.biases, s.N, s.D}, o)};
  for (auto* t : {&in.wx, &in.r, &in.b}) t->set_requires_grad(grad);
  return in;
}

torch::Tensor run_op(const OpInputs& in, Cell cell, Backend backend) {
  flashrnn::Options opt;
  opt.cell = cell;
  opt.backend = backend;
  return flashrnn::flashrnn(in.wx, in.r, in.b, std::nullopt, opt).states_all;
}

double relative_error(const torch::Tensor& got, const torch::Tensor& want) {
  const auto w = want.to(torch::kDouble);
  return ((got.to(torch::kDouble) - w).norm() / w.norm()).item<double>();
}

// Forward of `backend` against float64 vanilla on up to 8 batch rows (rows are
// independent, so a slice checks the kernel without a float64 run at B=256).
double check_against_float64(Cell cell, const Shape& s, torch::Dtype dtype, Backend backend) {
  Shape small = s;
  small.B = std::min<int64_t>(s.B, 8);
  OpInputs in = make_inputs(cell, small, dtype, false);
  OpInputs ref{in.wx.to(torch::kDouble), in.r.to(torch::kDouble), in.b.to(torch::kDouble)};
  return relative_error(run_op(in, cell, backend), run_op(ref, cell, Backend::kVanilla));
}

struct Bench {
  Args args;
  std::string device;
  Json records = Json::array();

  void record(const std::string& op, const std::string& cell, const std::string& backend,
              const Shape& s, const std::string& pass, double ms, double error) {
    records.push_back({{"op", op}, {"cell", cell}, {"backend", backend},
                       {"dtype", dtype_name(args.dtype)}, {"B", s.B}, {"T", s.T}, {"N", s.N},
                       {"D", s.D}, {"pass", pass}, {"median_ms", ms}, {"rel_error", error},
                       {"device", device}});
    std::printf("%-6s %-12s %-5s B=%-4ld T=%-5ld %3ldx%-4ld %-5s %9.3f ms  err %.1e\n",
                cell.c_str(), backend.c_str(), dtype_name(args.dtype).c_str(), long(s.B),
                long(s.T), long(s.N), long(s.D), pass.c_str(), ms, error);
    std::fflush(stdout);
  }

  void time_ours(Cell cell, const Shape& s, Backend backend) {
    const std::string cell_name(flashrnn::to_string(cell)), name(flashrnn::to_string(backend));
    double error = NAN;
    try {
      if (args.check) error = check_against_float64(cell, s, args.dtype, backend);
    } catch (const flashrnn::InputError& e) {
      std::printf("%-6s %-12s skipped: %s\n", cell_name.c_str(), name.c_str(), e.what());
      return;
    }
    std::vector<OpInputs> sets;
    for (int i = 0; i < kInputSets; ++i) sets.push_back(make_inputs(cell, s, args.dtype, true));
    // The vanilla loop is ~100x slower: fewer repetitions keep the run short.
    const int iters = backend == Backend::kVanilla ? 3 : args.iters;
    const double fw = median_ms([&](int i) {
      torch::NoGradGuard no_grad;
      run_op(sets[i % kInputSets], cell, backend);
    }, iters);
    record("rnn", cell_name, name, s, "fw", fw, error);
    if (args.breakdown)
      record("rnn", cell_name, name, s, "fw_train", median_ms([&](int i) {
        run_op(sets[i % kInputSets], cell, backend);  // recording: saves what the backward needs
      }, iters), error);
    const double fwbw = median_ms([&](int i) {
      const OpInputs& in = sets[i % kInputSets];
      for (auto* t : {&in.wx, &in.r, &in.b}) t->mutable_grad() = torch::Tensor();
      run_op(in, cell, backend).select(0, 0).sum().backward();
    }, iters);
    record("rnn", cell_name, name, s, "fwbw", fwbw, error);
  }

  // cuDNN through nn::LSTM / nn::GRU: a dense single head of size D with input
  // size D (it includes the input projection, which our op takes as given).
  void time_cudnn(Cell cell, const Shape& s, torch::Dtype dtype) {
    if (s.N != 1 || (cell != Cell::kLstm && cell != Cell::kGru)) return;
    const int64_t H = s.D;
    std::vector<std::function<torch::Tensor(const torch::Tensor&)>> layers;
    std::vector<torch::Tensor> inputs;
    for (int i = 0; i < kInputSets; ++i) {
      if (cell == Cell::kLstm) {
        torch::nn::LSTM m(torch::nn::LSTMOptions(H, H).batch_first(true));
        m->to(torch::kCUDA, dtype);
        m->flatten_parameters();
        layers.push_back([m](const torch::Tensor& x) mutable { return std::get<0>(m->forward(x)); });
      } else {
        torch::nn::GRU m(torch::nn::GRUOptions(H, H).batch_first(true));
        m->to(torch::kCUDA, dtype);
        m->flatten_parameters();
        layers.push_back([m](const torch::Tensor& x) mutable { return std::get<0>(m->forward(x)); });
      }
      inputs.push_back(torch::randn({s.B, s.T, H}, torch::dtype(dtype).device(torch::kCUDA))
                           .requires_grad_(true));
    }
    const auto run = [&](int i) { return layers[i % kInputSets](inputs[i % kInputSets]); };
    const std::string name = "cudnn_" + dtype_name(dtype);
    const std::string cell_name(flashrnn::to_string(cell));
    const torch::Dtype ours = args.dtype;
    args.dtype = dtype;  // recorded as the baseline's dtype
    record("rnn", cell_name, name, s, "fw", median_ms([&](int i) {
      torch::NoGradGuard no_grad;
      run(i);
    }, args.iters), NAN);
    record("rnn", cell_name, name, s, "fwbw", median_ms([&](int i) {
      run(i).sum().backward();
    }, args.iters), NAN);
    args.dtype = ours;
  }

  // Causal attention of the same shape: [B, N heads, T, D] through SDPA.
  void time_attention(const Shape& s) {
    const auto o = torch::TensorOptions().device(torch::kCUDA).dtype(args.dtype).requires_grad(true);
    std::vector<std::array<torch::Tensor, 3>> qkv;
    for (int i = 0; i < kInputSets; ++i)
      qkv.push_back({torch::randn({s.B, s.N, s.T, s.D}, o), torch::randn({s.B, s.N, s.T, s.D}, o),
                     torch::randn({s.B, s.N, s.T, s.D}, o)});
    const auto run = [&](int i) {
      const auto& t = qkv[i % kInputSets];
      return at::scaled_dot_product_attention(t[0], t[1], t[2], {}, 0.0, /*is_causal=*/true);
    };
    record("attention", "sdpa", "sdpa_causal", s, "fw", median_ms([&](int i) {
      torch::NoGradGuard no_grad;
      run(i);
    }, args.iters), NAN);
    record("attention", "sdpa", "sdpa_causal", s, "fwbw", median_ms([&](int i) {
      run(i).sum().backward();
    }, args.iters), NAN);
  }
};

}  // namespace

int main(int argc, char** argv) {
  Bench bench;
  bench.args = parse(argc, argv);
  const std::vector<Shape> shapes = sweep_shapes(bench.args.sweep, bench.args.shape);
  if (!torch::cuda::is_available()) {
    std::cerr << "flashbench: no CUDA device\n";
    return 1;
  }
  torch::manual_seed(0);
  bench.device = at::cuda::getCurrentDeviceProperties()->name;
  std::printf("flashbench on %s, dtype %s, %d repetitions (vanilla: 3)\n", bench.device.c_str(),
              dtype_name(bench.args.dtype).c_str(), bench.args.iters);
  for (const Shape& s : shapes) {
    for (const std::string& name : bench.args.cells) {
      const Cell cell = flashrnn::parse_cell(name);
      for (const std::string& backend : bench.args.backends) {
        const Backend b = flashrnn::parse_backend(backend);
        // The vanilla loop only where the paper's head sweep has it (it is slow).
        if (b != Backend::kVanilla || (s.B == 16 && s.T == 1024)) bench.time_ours(cell, s, b);
      }
      if (bench.args.baselines)
        for (auto dt : {torch::kHalf, torch::kBFloat16}) bench.time_cudnn(cell, s, dt);
    }
    if (bench.args.baselines) bench.time_attention(s);
  }
  std::string command = "flashbench";
  for (int i = 1; i < argc; ++i) command += std::string(" ") + argv[i];
  Json out = {{"command", command},
              {"device", bench.device},
              {"torch", TORCH_VERSION},
              {"records", bench.records}};
  std::ofstream(bench.args.out) << out.dump(1) << "\n";
  std::printf("wrote %s (%zu records)\n", bench.args.out.c_str(), bench.records.size());
  return 0;
}

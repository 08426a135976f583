// scanbench: the scan op's cuda backend against its vanilla backend on one GPU,
// in one process, against the device's measured copy bandwidth.
//
//   scanbench [--out-dir DIR] [--quick] [--case TEXT] [--no-vanilla]
//
// --case keeps the cases whose name contains TEXT; --no-vanilla skips timing
// the vanilla backend (for profilers).
//
// For each case: inputs in the storage dtype (gates 0.999 + 0.001·U(0,1) and
// values U(0,1), as the peers draw them; values and dL/dx scaled by 1/64 in
// float16, whose range x and da would otherwise exceed); correctness of x, da and db against
// the float64 vanilla backend on batch row 0; then medians of CUDA-event times
// of forward (no autograd) and forward + backward (autograd, a random dL/dx),
// for cuda and vanilla. The floor is the bytes that must move (forward: read a,
// b, write x; backward: read a, x, dL/dx, write da, db) over the copy bandwidth.
// Prints a table and writes DIR/scan_<device>.json. Exit code 1 if a
// correctness check fails.
#include <cctype>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "flashrnn/scan.h"
#include "gpu_timing.h"
#include "scan/scan_launch.h"   // the kernels' knobs and persistent grid sizes
#include "scan/scan_variant.h"  // which kernels run (FLASHRNN_SCAN_VARIANT)

namespace scanbench {
namespace {

using flashrnn::ScanBackend;
using flashrnn::ScanLayout;

struct Case {
  ScanLayout layout;
  at::ScalarType dtype;
  int64_t batch, channels, steps;
  bool reverse = false;
};

std::string dtype_name(at::ScalarType t) {
  return t == at::kFloat ? "fp32" : t == at::kBFloat16 ? "bf16" : "fp16";
}

std::string shape_text(const Case& c) {
  const std::string b = std::to_string(c.batch), d = std::to_string(c.channels),
                    t = std::to_string(c.steps);
  return c.layout == ScanLayout::kBDT ? "(" + b + "," + d + "," + t + ")"
                                      : "(" + b + "," + t + "," + d + ")";
}

std::string name_of(const Case& c) {
  return std::string(flashrnn::to_string(c.layout)) + " " + dtype_name(c.dtype) + " " +
         shape_text(c) + (c.reverse ? " rev" : "");
}

std::vector<int64_t> sizes_of(const Case& c) {
  return c.layout == ScanLayout::kBDT ? std::vector<int64_t>{c.batch, c.channels, c.steps}
                                      : std::vector<int64_t>{c.batch, c.steps, c.channels};
}

double tolerance_of(at::ScalarType t) {
  return t == at::kFloat ? 1e-5 : t == at::kBFloat16 ? 1e-2 : 2e-3;
}

double relative_error(const at::Tensor& out, const at::Tensor& ref) {
  const at::Tensor o = out.to(at::kDouble), r = ref.to(at::kDouble);
  return (o - r).norm().item<double>() / std::max(r.norm().item<double>(), 1e-300);
}

struct Errors {
  double x = 0, da = 0, db = 0;
};

// x, da, db of the cuda backend against the float64 vanilla backend, on batch row 0.
Errors check_against_float64(const Case& c, const at::Tensor& a, const at::Tensor& b,
                             const at::Tensor& dx) {
  const auto row0 = [](const at::Tensor& t) { return t.narrow(0, 0, 1); };
  const auto grads_of = [&](const at::Tensor& a_in, const at::Tensor& b_in, const at::Tensor& g,
                            ScanBackend backend) {
    flashrnn::ScanOptions o;
    o.layout = c.layout;
    o.reverse = c.reverse;
    o.backend = backend;
    const at::Tensor al = a_in.detach().requires_grad_(true), bl = b_in.detach().requires_grad_(true);
    const at::Tensor x = flashrnn::scan(al, bl, o).x;
    const auto d = torch::autograd::grad({x}, {al, bl}, {g});
    return std::vector<at::Tensor>{x.detach(), d[0], d[1]};
  };
  // The cuda backend runs on the whole case (the kernels and plan that are timed),
  // the float64 reference on batch row 0 only.
  const auto ours = grads_of(a, b, dx, ScanBackend::kCuda);
  const auto ref = grads_of(row0(a).to(at::kDouble), row0(b).to(at::kDouble),
                            row0(dx).to(at::kDouble), ScanBackend::kVanilla);
  return {relative_error(row0(ours[0]), ref[0]), relative_error(row0(ours[1]), ref[1]),
          relative_error(row0(ours[2]), ref[2])};
}

struct Measured {
  Timing fw, fwbw;
};

Measured time_backend(const Case& c, const at::Tensor& a, const at::Tensor& b,
                      const at::Tensor& dx, ScanBackend backend, int warmup, int reps) {
  flashrnn::ScanOptions o;
  o.layout = c.layout;
  o.reverse = c.reverse;
  o.backend = backend;
  Measured m;
  {
    const torch::NoGradGuard no_grad;
    m.fw = time_on_gpu([&] { flashrnn::scan(a, b, o); }, warmup, reps);
  }
  const at::Tensor al = a.detach().requires_grad_(true), bl = b.detach().requires_grad_(true);
  m.fwbw = time_on_gpu(
      [&] {
        const at::Tensor x = flashrnn::scan(al, bl, o).x;
        torch::autograd::grad({x}, {al, bl}, {dx});
      },
      warmup, reps);
  return m;
}

// The persistent grid of the cuda kernels for this case: {forward, backward} blocks.
std::vector<int> resident_blocks(const Case& c) {
  flashrnn::scan_kernels::ScanShape shape;
  shape.batch = c.batch;
  shape.channels = c.channels;
  shape.steps = c.steps;
  shape.btd = c.layout == ScanLayout::kBTD;
  shape.dtype = c.dtype == at::kFloat      ? flashrnn::scan_kernels::ScanDtype::kFloat32
                : c.dtype == at::kBFloat16 ? flashrnn::scan_kernels::ScanDtype::kBFloat16
                                           : flashrnn::scan_kernels::ScanDtype::kFloat16;
  std::vector<int> blocks(2, 0);
  for (int backward = 0; backward < 2; ++backward)
    if (flashrnn::scan_kernels::scan_resident_blocks(shape, backward, blocks[backward]) !=
        cudaSuccess)
      blocks[backward] = -1;
  return blocks;
}

nlohmann::json timing_json(const Timing& t) {
  return {{"median_ms", t.median_ms}, {"min_ms", t.min_ms}, {"max_ms", t.max_ms}, {"reps", t.reps}};
}

std::string device_slug(const std::string& name) {
  std::string slug;
  for (char ch : name) {
    if (std::isalnum(static_cast<unsigned char>(ch)))
      slug += char(std::tolower(static_cast<unsigned char>(ch)));
    else if (!slug.empty() && slug.back() != '_')
      slug += '_';
  }
  while (!slug.empty() && slug.back() == '_') slug.pop_back();
  return slug;
}

std::vector<Case> cases(bool quick) {
  const int64_t long_steps = quick ? 8192 : 65536, few_steps = quick ? (1 << 16) : (1 << 20);
  return {
      {ScanLayout::kBDT, at::kFloat, 8, 1536, 4096},
      {ScanLayout::kBDT, at::kBFloat16, 8, 1536, 4096},
      {ScanLayout::kBDT, at::kHalf, 8, 1536, 4096},
      {ScanLayout::kBDT, at::kFloat, 8, 1536, long_steps},
      {ScanLayout::kBDT, at::kFloat, 1, 16, few_steps},
      {ScanLayout::kBDT, at::kFloat, 8, 1536, 4096, /*reverse=*/true},
      {ScanLayout::kBTD, at::kFloat, 8, 1536, 4096},
      {ScanLayout::kBTD, at::kBFloat16, 8, 1536, 4096},
      {ScanLayout::kBTD, at::kFloat, 1, 16, few_steps},
  };
}

}  // namespace
}  // namespace scanbench

int main(int argc, char** argv) {
  using namespace scanbench;
  std::string out_dir = "experiments/results", only_case;
  bool quick = false, time_vanilla = true;
  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--out-dir" && i + 1 < argc) {
      out_dir = argv[++i];
    } else if (arg == "--quick") {
      quick = true;
    } else if (arg == "--case" && i + 1 < argc) {
      only_case = argv[++i];
    } else if (arg == "--no-vanilla") {
      time_vanilla = false;
    } else {
      std::cerr << "usage: scanbench [--out-dir DIR] [--quick] [--case TEXT] [--no-vanilla]\n";
      return 2;
    }
  }
  if (!torch::cuda::is_available()) {
    std::cerr << "scanbench: no CUDA device\n";
    return 2;
  }
  torch::manual_seed(0);
  const cudaDeviceProp* props = at::cuda::getCurrentDeviceProperties();
  const double copy_bw = copy_bandwidth_bytes_per_s();
  const flashrnn::scan_kernels::ScanKernelKnobs knobs = flashrnn::scan_kernels::scan_kernel_knobs();
  std::printf("device: %s, %d SMs; device-to-device copy: %.0f GB/s (read + write)\n",
              props->name, props->multiProcessorCount, copy_bw / 1e9);
  const std::string variant =
      flashrnn::scan_kernels::describe_scan_variant(flashrnn::scan_kernels::scan_variant());
  std::printf("kernels: %s; tile kernels: %d warps per tile, %d steps per thread [B,D,T], %d [B,T,D]\n",
              variant.c_str(), knobs.warps_per_tile, knobs.bdt_steps_per_thread,
              knobs.btd_steps_per_thread);

  nlohmann::json results = nlohmann::json::array();
  bool all_correct = true;
  std::vector<std::string> rows;
  for (const Case& c : cases(quick)) {
    if (name_of(c).find(only_case) == std::string::npos) continue;
    const auto options = at::TensorOptions().device(at::kCUDA).dtype(c.dtype);
    const at::Tensor a = (0.999 + 0.001 * at::rand(sizes_of(c), options.dtype(at::kFloat))).to(c.dtype);
    // float16 holds at most 65504: smaller values keep x and da (≈ 1000·|b|·|db|) finite.
    const double scale = c.dtype == at::kHalf ? 1.0 / 64 : 1.0;
    const at::Tensor b = (scale * at::rand(sizes_of(c), options.dtype(at::kFloat))).to(c.dtype);
    const at::Tensor dx = (scale * at::randn(sizes_of(c), options.dtype(at::kFloat))).to(c.dtype);
    const Errors err = check_against_float64(c, a, b, dx);
    const double tol = tolerance_of(c.dtype);
    const bool correct = err.x < tol && err.da < tol && err.db < tol;
    all_correct = all_correct && correct;

    const Measured ours = time_backend(c, a, b, dx, ScanBackend::kCuda, 5, 30);
    // The same bytes as the forward through torch's vectorised elementwise kernel
    // (x = a·b: 2 reads, 1 write): what a streaming kernel reaches for this shape.
    at::Tensor product = at::empty_like(a);
    const Timing elementwise = time_on_gpu([&] { at::mul_out(product, a, b); }, 5, 30);
    product = at::Tensor();
    const Measured vanilla =
        time_vanilla ? time_backend(c, a, b, dx, ScanBackend::kVanilla, 1, 3) : Measured{};
    const std::vector<int> blocks = resident_blocks(c);
    const double elements = double(a.numel()), es = double(a.element_size());
    const double fw_bytes = 3 * es * elements, fwbw_bytes = 8 * es * elements;
    const double fw_floor = fw_bytes / copy_bw * 1e3, fwbw_floor = fwbw_bytes / copy_bw * 1e3;

    char row[512];
    std::snprintf(row, sizeof row,
                  "%-28s fw %8.4f ms (vanilla %8.2f, x%6.1f) floor %7.4f = %3.0f%% | fwbw %8.4f ms "
                  "(vanilla %8.2f, x%6.1f) floor %7.4f = %3.0f%% | err %.1e %.1e %.1e %s | "
                  "grid %d/%d | a*b %.0f%%",
                  name_of(c).c_str(), ours.fw.median_ms, vanilla.fw.median_ms,
                  vanilla.fw.median_ms / ours.fw.median_ms, fw_floor,
                  100 * fw_floor / ours.fw.median_ms, ours.fwbw.median_ms, vanilla.fwbw.median_ms,
                  vanilla.fwbw.median_ms / ours.fwbw.median_ms, fwbw_floor,
                  100 * fwbw_floor / ours.fwbw.median_ms, err.x, err.da, err.db,
                  correct ? "ok" : "FAIL", blocks[0], blocks[1],
                  100 * fw_floor / elementwise.median_ms);
    std::printf("%s\n", row);
    rows.push_back(row);
    results.push_back({
        {"case", name_of(c)},
        {"layout", std::string(flashrnn::to_string(c.layout))},
        {"dtype", dtype_name(c.dtype)},
        {"shape", sizes_of(c)},
        {"reverse", c.reverse},
        {"relative_error_vs_float64", {{"x", err.x}, {"da", err.da}, {"db", err.db}, {"tolerance", tol}}},
        {"correct", correct},
        {"persistent_grid_blocks", {{"fw", blocks[0]}, {"bw", blocks[1]}}},
        {"elementwise_a_times_b", {{"cuda", timing_json(elementwise)},
                                   {"fraction_of_floor", fw_floor / elementwise.median_ms}}},
        {"fw", {{"cuda", timing_json(ours.fw)}, {"vanilla", timing_json(vanilla.fw)},
                {"speedup_vs_vanilla", vanilla.fw.median_ms / ours.fw.median_ms},
                {"bytes", fw_bytes}, {"floor_ms", fw_floor},
                {"fraction_of_floor", fw_floor / ours.fw.median_ms},
                {"achieved_GBps", fw_bytes / (ours.fw.median_ms * 1e-3) / 1e9}}},
        {"fwbw", {{"cuda", timing_json(ours.fwbw)}, {"vanilla", timing_json(vanilla.fwbw)},
                  {"speedup_vs_vanilla", vanilla.fwbw.median_ms / ours.fwbw.median_ms},
                  {"bytes", fwbw_bytes}, {"floor_ms", fwbw_floor},
                  {"fraction_of_floor", fwbw_floor / ours.fwbw.median_ms},
                  {"achieved_GBps", fwbw_bytes / (ours.fwbw.median_ms * 1e-3) / 1e9}}},
    });
    c10::cuda::CUDACachingAllocator::emptyCache();
  }

  const nlohmann::json doc = {
      {"benchmark", "scan x[t] = a[t]*x[t-1] + b[t]: cuda backend vs vanilla backend"},
      {"command", command},
      {"device", props->name},
      {"multiprocessors", props->multiProcessorCount},
      {"torch", TORCH_VERSION},
      {"copy_bandwidth_GBps", copy_bw / 1e9},
      {"kernel_variant", variant},
      {"kernel_knobs", {{"warps_per_tile", knobs.warps_per_tile},
                        {"bdt_steps_per_thread", knobs.bdt_steps_per_thread},
                        {"btd_steps_per_thread", knobs.btd_steps_per_thread}}},
      {"method",
       "median of CUDA-event times, host not waiting between repetitions; cuda: 5 warm-up + 30 "
       "timed, vanilla: 1 + 3; fwbw = forward + autograd backward with a random dL/dx; floor = "
       "bytes (fw 3, fwbw 8 tensors) / copy bandwidth; errors vs the float64 vanilla backend on "
       "batch row 0"},
      {"cases", results},
  };
  const std::string path = out_dir + "/scan_" + device_slug(props->name) + ".json";
  std::ofstream(path) << doc.dump(2) << "\n";
  std::printf("wrote %s\n", path.c_str());
  std::printf("\nsummary (%s, copy %.0f GB/s; %s; tile kernels %d warps, steps %d/%d)\n",
              props->name, copy_bw / 1e9, variant.c_str(), knobs.warps_per_tile,
              knobs.bdt_steps_per_thread, knobs.btd_steps_per_thread);
  for (const std::string& r : rows) std::printf("%s\n", r.c_str());
  return all_correct ? 0 : 1;
}

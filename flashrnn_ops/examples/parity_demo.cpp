// The recurrent op on its own, as a C++ user of flashrnn_ops calls it: a
// one-layer LSTM built on flashrnn::flashrnn learns the parity of bit strings,
// the classic state-tracking task, on short strings and is then asked about
// strings four times longer than any it saw. About 3 seconds on a CPU.
//
//   build/flashrnn_ops/examples/flashrnn_demo [--steps N] [--device cpu|cuda]
//                                             [--cell lstm|slstm|gru|elman] [--seed S]
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "flashrnn/flashrnn.h"

namespace {

struct DemoConfig {
  int steps = 400;
  int batch = 64;
  int hidden = 64;
  int min_len = 2, max_len = 16, test_len = 64;
  std::string device = torch::cuda::is_available() ? "cuda" : "cpu";
  std::string cell = "lstm";
  uint64_t seed = 0;
};

constexpr const char* kUsage =
    "usage: flashrnn_demo [--steps N] [--device cpu|cuda] [--cell lstm|slstm|gru|elman] [--seed S]";

struct UsageError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

[[noreturn]] void usage(const std::string& problem) { throw UsageError(problem); }

DemoConfig parse_args(const std::vector<std::string>& args) {
  DemoConfig c;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string arg = args[i];
    if (i + 1 >= args.size()) usage("missing value after " + arg);
    const std::string value = args[++i];
    try {
      if (arg == "--steps") c.steps = std::stoi(value);
      else if (arg == "--device") c.device = value;
      else if (arg == "--cell") c.cell = value;
      else if (arg == "--seed") c.seed = std::stoull(value);
      else usage("unknown option " + arg);
    } catch (const std::logic_error&) {
      usage("bad value '" + value + "' for " + arg);
    }
  }
  if (c.device != "cpu" && c.device != "cuda") usage("--device must be cpu or cuda");
  if (c.device == "cuda" && !torch::cuda::is_available()) usage("--device cuda: no GPU found");
  if (c.steps < 1) usage("--steps must be positive");
  return c;
}

// One recurrent layer: embedding -> gate projection -> flashrnn -> classifier.
struct ParityModel : torch::nn::Module {
  ParityModel(flashrnn::Cell cell, int hidden)
      : cell(cell), layout(flashrnn::cell_layout(cell)), hidden(hidden) {
    embed = register_module("embed", torch::nn::Embedding(2, layout.gates * hidden));
    r = register_parameter("r", torch::randn({layout.gates, 1, hidden, hidden}) / std::sqrt(hidden));
    b = register_parameter("b", torch::zeros({layout.biases, 1, hidden}));
    head = register_module("head", torch::nn::Linear(hidden, 2));
  }

  // bits [B, T] -> logits [B, 2] from the last hidden state.
  torch::Tensor forward(const torch::Tensor& bits) {
    const int64_t batch = bits.size(0), steps = bits.size(1);
    auto wx = embed(bits).view({batch, steps, layout.gates, 1, hidden});
    flashrnn::Options options;
    options.cell = cell;
    auto result = flashrnn::flashrnn(wx, r, b, std::nullopt, options);
    return head(result.last_states[0].view({batch, hidden}));
  }

  flashrnn::Cell cell;
  flashrnn::CellLayout layout;
  int hidden;
  torch::nn::Embedding embed{nullptr};
  torch::nn::Linear head{nullptr};
  torch::Tensor r, b;
};

double accuracy(ParityModel& model, int length, const torch::Device& device) {
  torch::NoGradGuard no_grad;
  auto bits = torch::randint(0, 2, {512, length}, torch::TensorOptions(torch::kLong).device(device));
  auto label = bits.sum(1).remainder(2);
  return model.forward(bits).argmax(1).eq(label).to(torch::kFloat).mean().item<double>();
}

void train_and_test(const DemoConfig& c) {
  torch::manual_seed(c.seed);
  const torch::Device device(c.device);
  ParityModel model(flashrnn::parse_cell(c.cell), c.hidden);
  model.to(device);
  torch::optim::Adam optimizer(model.parameters(), torch::optim::AdamOptions(3e-3));
  std::printf("flashrnn_demo: %s (1 head x %d) learns parity on %s, lengths %d..%d\n",
              c.cell.c_str(), c.hidden, c.device.c_str(), c.min_len, c.max_len);

  for (int step = 1; step <= c.steps; ++step) {
    const int length = c.min_len + int(torch::randint(c.max_len - c.min_len + 1, {1}).item<int64_t>());
    auto bits = torch::randint(0, 2, {c.batch, length}, torch::TensorOptions(torch::kLong).device(device));
    auto loss = torch::nn::functional::cross_entropy(model.forward(bits), bits.sum(1).remainder(2));
    optimizer.zero_grad();
    loss.backward();
    torch::nn::utils::clip_grad_norm_(model.parameters(), 1.0);
    optimizer.step();
    if (step % 50 == 0 || step == c.steps)
      std::printf("step %4d  loss %.4f\n", step, loss.item<double>());
  }
  std::printf("accuracy: length %d (trained) %.3f, length %d (4x longer) %.3f\n", c.max_len,
              accuracy(model, c.max_len, device), c.test_len, accuracy(model, c.test_len, device));
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  for (const std::string& arg : args)
    if (arg == "--help" || arg == "-h") {
      std::puts(kUsage);
      return 0;
    }
  try {
    train_and_test(parse_args(args));
  } catch (const UsageError& e) {
    std::fprintf(stderr, "flashrnn_demo: %s\n%s\n", e.what(), kUsage);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flashrnn_demo: error: %s\n", e.what());
    return 1;
  }
  return 0;
}

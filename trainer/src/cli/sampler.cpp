#include "flashtrain/trainer/cli/sampler.h"

#include <torch/cuda.h>
#include <torch/torch.h>

#include <chrono>
#include <random>
#include <stdexcept>

namespace flashtrain::trainer {
namespace {

// Index drawn from softmax(logits / temperature), with our own generator so
// that sampling neither depends on nor disturbs torch's.
std::int32_t draw(const torch::Tensor& logits, double temperature, std::mt19937_64& rng) {
  const torch::Tensor probabilities = torch::softmax(logits.to(torch::kDouble) / temperature, -1).to(torch::kCPU);
  const double* p = probabilities.data_ptr<double>();
  const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  double cumulative = 0.0;
  const std::int64_t n = probabilities.numel();
  for (std::int64_t i = 0; i < n; ++i) {
    cumulative += p[i];
    if (u < cumulative) return std::int32_t(i);
  }
  return std::int32_t(n - 1);  // rounding left u above the last sum
}

}  // namespace

std::vector<std::int32_t> generate(models::LanguageModelImpl& model, const std::vector<std::int32_t>& prompt,
                                   const SampleOptions& options, GenerationTimes* times) {
  if (prompt.empty()) throw std::invalid_argument("generate: the prompt has no tokens");
  if (options.temperature < 0) throw std::invalid_argument("generate: temperature must be >= 0");
  const bool was_training = model.is_training();
  model.eval();
  torch::NoGradGuard no_grad;
  const torch::Device device = model.parameters().front().device();
  const auto token_tensor = [&](std::int32_t token) {
    return torch::full({1}, std::int64_t(token), torch::TensorOptions(torch::kLong).device(device));
  };

  const auto now = [&] {
    if (device.is_cuda()) torch::cuda::synchronize(device.index());
    return std::chrono::steady_clock::now();
  };
  const auto seconds = [](auto from, auto to) { return std::chrono::duration<double>(to - from).count(); };
  const auto started = now();
  const torch::Tensor prompt_tokens =
      torch::tensor(std::vector<std::int64_t>(prompt.begin(), prompt.end()), torch::kLong).to(device).unsqueeze(0);
  models::ModelStepOutput prefilled = model.forward_chunk(prompt_tokens, model.initial_state(1));
  models::ModelState state = std::move(prefilled.state);
  torch::Tensor logits = prefilled.logits[0];
  const auto prefilled_at = now();
  std::mt19937_64 rng(options.seed);
  std::vector<std::int32_t> generated;
  while (std::int64_t(generated.size()) < options.max_new_tokens) {
    const std::int32_t next = options.temperature == 0.0 ? std::int32_t(logits.argmax().item<std::int64_t>())
                                                         : draw(logits, options.temperature, rng);
    generated.push_back(next);
    if (options.stop_token && next == *options.stop_token) break;
    if (std::int64_t(generated.size()) == options.max_new_tokens) break;
    models::ModelStepOutput out = model.forward_step(token_tensor(next), state);
    state = std::move(out.state);
    logits = out.logits[0];
  }
  if (times) {
    const auto done = now();
    times->prefill_seconds = seconds(started, prefilled_at);
    times->decode_seconds = seconds(prefilled_at, done);
  }
  if (was_training) model.train();
  return generated;
}

}  // namespace flashtrain::trainer

#include "flashtrain/trainer/cli/sampler.h"

#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <chrono>
#include <memory>
#include <random>
#include <stdexcept>

#include "flashtrain/trainer/step/graph_capture.h"

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

// Whether two states hold the same entries of the same shapes.
bool same_shapes(const models::ModelState& a, const models::ModelState& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].size() != b[i].size()) return false;
    for (const auto& [key, tensor] : a[i]) {
      const auto other = b[i].find(key);
      if (other == b[i].end() || other->second.sizes() != tensor.sizes()) return false;
    }
  }
  return true;
}

// One decode step: the logits after a token, the state carried on. Eager, or
// replayed from a CUDA graph captured on static buffers (the token in, the
// state updated in place, the logits out).
class DecodeStep {
 public:
  DecodeStep(models::LanguageModelImpl& model, models::ModelState state, bool cuda_graph)
      : model_(model), state_(std::move(state)) {
    const torch::Device device = model.parameters().front().device();
    if (!cuda_graph) {
      mode_ = "eager (cuda_graph off)";
    } else if (!device.is_cuda()) {
      mode_ = "eager (not on a GPU)";
    } else {
      capture(device);
    }
  }

  // logits [vocab] after `token` ([1], long, on the model's device). Replayed,
  // they live in the graph's buffer until the next step.
  torch::Tensor operator()(const torch::Tensor& token) {
    if (!graph_) {
      models::ModelStepOutput out = model_.forward_step(token, state_);
      state_ = std::move(out.state);
      return out.logits[0];
    }
    token_.copy_(token);
    graph_->replay();
    return logits_;
  }

  const std::string& mode() const { return mode_; }

 private:
  void capture(const torch::Device& device) {
    token_ = torch::zeros({1}, torch::TensorOptions(torch::kLong).device(device));
    for (models::BlockState& block : state_)
      for (auto& entry : block) entry.second = entry.second.clone();  // owned: replays write into them
    torch::cuda::synchronize(device.index());  // the prefill, on the default stream, is done
    const c10::cuda::CUDAStreamGuard on_side_stream(c10::cuda::getStreamFromPool(false, device.index()));
    // One eager step first: its kernels' lazy set-up happens outside the capture,
    // and its state shows whether the step keeps the state's shapes.
    const models::ModelStepOutput warm = model_.forward_step(token_, state_);
    if (!same_shapes(warm.state, state_)) {
      mode_ = "eager (the state grows with the context: attention's KV cache)";
      torch::cuda::synchronize(device.index());
      return;
    }
    auto graph = std::make_unique<at::cuda::CUDAGraph>();
    try {
      capture_graph(*graph, [&] {
        models::ModelStepOutput out = model_.forward_step(token_, state_);
        for (std::size_t i = 0; i < state_.size(); ++i)
          for (auto& [key, tensor] : state_[i]) tensor.copy_(out.state[i].at(key));
        logits_ = out.logits[0];
      });
    } catch (const std::exception& e) {
      mode_ = std::string("eager (the CUDA graph capture failed: ") + e.what() + ")";
      logits_ = torch::Tensor();
      torch::cuda::synchronize(device.index());
      return;
    }
    torch::cuda::synchronize(device.index());
    graph_ = std::move(graph);
    mode_ = "cuda graph";
  }

  models::LanguageModelImpl& model_;
  models::ModelState state_;
  std::unique_ptr<at::cuda::CUDAGraph> graph_;
  torch::Tensor token_, logits_;
  std::string mode_;
};

}  // namespace

std::int64_t auto_prefill_chunks(const models::LanguageModelImpl& model, std::int64_t prompt_tokens, bool on_gpu) {
  if (model.options().model.wavefront_chunks > 1) return model.options().model.wavefront_chunks;
  const std::int64_t chunks = 2 * std::int64_t(model.blocks().size());
  return on_gpu && chunks > 1 && prompt_tokens >= chunks * kMinPrefillChunkTokens ? chunks : 0;
}

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
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(device.index());
  const auto started = now();
  const torch::Tensor prompt_tokens =
      torch::tensor(std::vector<std::int64_t>(prompt.begin(), prompt.end()), torch::kLong).to(device).unsqueeze(0);
  const std::int64_t prefill_chunks =
      options.prefill_chunks.value_or(auto_prefill_chunks(model, std::int64_t(prompt.size()), device.is_cuda()));
  models::ModelStepOutput prefilled = model.forward_chunk(prompt_tokens, model.initial_state(1), prefill_chunks);
  torch::Tensor logits = prefilled.logits[0];
  const auto prefilled_at = now();
  std::mt19937_64 rng(options.seed);
  std::vector<std::int32_t> generated;
  std::unique_ptr<DecodeStep> step;
  double capture_seconds = 0.0;
  while (std::int64_t(generated.size()) < options.max_new_tokens) {
    const std::int32_t next = options.temperature == 0.0 ? std::int32_t(logits.argmax().item<std::int64_t>())
                                                         : draw(logits, options.temperature, rng);
    generated.push_back(next);
    if (options.stop_token && next == *options.stop_token) break;
    if (std::int64_t(generated.size()) == options.max_new_tokens) break;
    if (!step) {
      const auto setting_up = now();
      step = std::make_unique<DecodeStep>(model, std::move(prefilled.state), options.cuda_graph);
      capture_seconds = seconds(setting_up, now());
    }
    logits = (*step)(token_tensor(next));
  }
  if (times) {
    const auto done = now();
    times->prefill_seconds = seconds(started, prefilled_at);
    times->prefill_chunks = prefill_chunks;
    times->decode_seconds = seconds(prefilled_at, done) - capture_seconds;
    times->capture_seconds = capture_seconds;
    times->decode_mode = step ? step->mode() : "no step (one token)";
    if (device.is_cuda())
      times->peak_memory_bytes =
          c10::cuda::CUDACachingAllocator::getDeviceStats(device.index()).allocated_bytes[0].peak;  // [0]: all pools
  }
  if (was_training) model.train();
  return generated;
}

}  // namespace flashtrain::trainer

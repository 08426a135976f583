#include "flashtrain/trainer/run/model_factory.h"

#include <torch/torch.h>

#include <filesystem>
#include <string>

#include "flashtrain/data/tokenizer.h"
#include "flashtrain/trainer/batch/task_setup.h"

namespace flashtrain::trainer {

std::int64_t resolve_vocab_size(const config::ResolvedConfig& resolved) {
  const config::Config& config = resolved.config;
  if (!config.data.task.empty()) {  // consistency.cpp checks a vocab_size against the task's
    if (config.model.vocab_size > 0) return config.model.vocab_size;
    const data::TaskSpec spec = task_spec(config.data, Split::kTrain);
    return data::task_vocabulary(spec.task, spec.options).size();
  }
  std::error_code ignored;
  if (config.model.vocab_size > 0 && !std::filesystem::is_regular_file(config.tokenizer.path, ignored))
    return config.model.vocab_size;
  const std::int64_t pieces = data::Tokenizer(config.tokenizer.path).vocab_size();
  if (config.model.vocab_size == 0) return pieces;
  // A smaller table would fail only at the first token beyond it, mid-run.
  if (config.model.vocab_size < pieces)
    throw resolved.error_at({"model.vocab_size", "tokenizer.path"},
                            "model.vocab_size (" + std::to_string(config.model.vocab_size) +
                                ") is smaller than the " + std::to_string(pieces) + " pieces of the tokenizer " +
                                config.tokenizer.path + "; set 0 to take the tokenizer's size, or at least " +
                                std::to_string(pieces));
  return config.model.vocab_size;
}

torch::Device resolve_device(const config::ResolvedConfig& resolved) {
  const std::string& device = resolved.config.training.device;
  const bool have_gpu = torch::cuda::is_available();
  if (device == "cuda" && !have_gpu)
    throw resolved.error_at({"training.device"}, "training.device is cuda but no GPU is available; use auto or cpu");
  return (device == "cuda" || (device == "auto" && have_gpu)) ? torch::Device(torch::kCUDA, 0)
                                                               : torch::Device(torch::kCPU);
}

models::LanguageModel build_model(const config::ResolvedConfig& resolved, std::int64_t vocab_size,
                                  torch::Device device) {
  models::LanguageModelOptions options;
  options.model = resolved.config.model;
  options.vocab_size = vocab_size;
  torch::manual_seed(std::uint64_t(resolved.config.training.seed));
  models::LanguageModel model(options);
  model->to(device);
  return model;
}

}  // namespace flashtrain::trainer

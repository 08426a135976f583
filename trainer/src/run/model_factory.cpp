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

models::LanguageModelOptions language_model_options(const config::ResolvedConfig& resolved,
                                                    std::int64_t vocab_size) {
  const config::ModelConfig& m = resolved.config.model;
  models::LanguageModelOptions o;
  o.vocab_size = vocab_size;
  o.d_model = m.dim;
  for (std::int64_t layer = 0; layer < m.n_layers; ++layer)
    o.blocks.push_back(models::parse_block_kind(m.layer_kind(layer)));
  // The schema admits only these two; consistency.cpp checks the kinds of a plain model.
  o.structure = m.structure == "plain" ? models::Structure::kPlain : models::Structure::kResidual;
  o.tie_embeddings = m.tie_embeddings;
  o.norm_eps = m.norm_eps;
  o.dropout = m.dropout;
  o.recompute_layers = m.recompute_layers;
  o.wavefront_chunks = m.wavefront_chunks;

  const models::FeedForwardOptions ffn{m.ffn_factor, m.ffn_multiple_of};
  const flashrnn::Backend backend = flashrnn::parse_backend(m.backend);
  models::BlockOptions& b = o.block;
  b.recurrent.num_heads = m.n_heads;
  b.recurrent.head_dim = m.head_dim;
  b.recurrent.backend = backend;
  b.recurrent.ffn = ffn;
  b.recurrent.retain_bias_min = m.retain_bias_min;
  b.recurrent.retain_bias_max = m.retain_bias_max;
  b.recurrent.recurrent_init_scale = m.recurrent_init_scale;
  b.slstm.num_heads = m.n_heads;
  b.slstm.conv_kernel = m.conv_kernel;
  b.slstm.backend = backend;
  b.slstm.ffn = ffn;
  b.linear_scan.ffn = ffn;
  b.transformer.num_heads = m.n_heads;
  b.transformer.rope_theta = m.rope_theta;
  b.transformer.ffn = ffn;
  return o;
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
  const models::LanguageModelOptions options = language_model_options(resolved, vocab_size);
  torch::manual_seed(std::uint64_t(resolved.config.training.seed));
  models::LanguageModel model(options);
  model->to(device);
  return model;
}

}  // namespace flashtrain::trainer

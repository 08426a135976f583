#include "flashtrain/models/language_model.h"

#include <torch/torch.h>

#include <sstream>
#include <string>

#include "flashtrain/models/errors.h"
#include "init.h"
#include "token_embedding.h"
#include "wavefront.h"

namespace flashtrain::models {

namespace {

const LanguageModelOptions& checked(const LanguageModelOptions& o) {
  const ModelConfig& m = o.model;
  if (o.vocab_size < 1)
    throw OptionsError("model: vocab_size must be positive, got " + std::to_string(o.vocab_size));
  if (m.dim < 1) throw OptionsError("model: dim must be positive, got " + std::to_string(m.dim));
  if (!(m.dropout >= 0.0 && m.dropout < 1.0))
    throw OptionsError("model: dropout must lie in [0, 1), got " + std::to_string(m.dropout));
  if (m.wavefront_chunks < 0)
    throw OptionsError("model: wavefront_chunks must not be negative, got " + std::to_string(m.wavefront_chunks));
  if (m.recompute_layers < 0)
    throw OptionsError("model: recompute_layers must not be negative, got " + std::to_string(m.recompute_layers));
  if (!(m.norm_eps > 0.0))
    throw OptionsError("model: norm_eps must be positive, got " + std::to_string(m.norm_eps));
  return o;
}

void check_tokens(const torch::Tensor& tokens, int64_t dims, int64_t vocab_size, const char* what) {
  const bool integral = tokens.defined() && (tokens.scalar_type() == torch::kLong ||
                                             tokens.scalar_type() == torch::kInt);
  if (!integral || tokens.dim() != dims) {
    std::ostringstream message;
    message << "model: " << what << " must be int64 or int32 "
            << (dims == 2 ? "[batch, time]" : "[batch]");
    if (tokens.defined()) message << ", got " << tokens.scalar_type() << " " << tokens.sizes();
    throw InputError(message.str());
  }
  // Checking the range costs nothing on the CPU; on a GPU it would be a sync,
  // and the embedding's own device-side check catches it there.
  if (tokens.is_cpu() && tokens.numel() > 0) {
    const int64_t low = tokens.min().item<int64_t>(), high = tokens.max().item<int64_t>();
    if (low < 0 || high >= vocab_size) {
      throw InputError("model: token ids must lie in [0, " + std::to_string(vocab_size) +
                       "), got " + std::to_string(low < 0 ? low : high));
    }
  }
}

}  // namespace

LanguageModelImpl::LanguageModelImpl(LanguageModelOptions options) : options_(checked(options)) {
  const ModelConfig& m = options_.model;
  const std::vector<BlockKind> kinds = layer_kinds(m);
  const BlockContext context{m.dim, int64_t(kinds.size()), m.norm_eps, structure_of(m), m.dropout};
  const BlockOptions block_options_of_the_section = block_options(m);
  embedding_ = register_module("embedding", torch::nn::Embedding(options_.vocab_size, m.dim));
  init::small_(embedding_->weight, m.dim);
  block_list_ = register_module("blocks", torch::nn::ModuleList());
  for (size_t layer = 0; layer < kinds.size(); ++layer) {
    BlockOptions block = block_options_of_the_section;
    if (int64_t(layer) < m.recompute_layers) block.recurrent.recompute = block.slstm.recompute = true;
    blocks_.emplace_back(kinds[layer], context, block);
    block_list_->push_back(blocks_.back());
  }
  if (context.structure == Structure::kResidual) {
    const NormKind final_norm = options_.final_norm.value_or(blocks_.back()->norm_kind());
    final_norm_ = register_module("final_norm", Norm(m.dim, final_norm, m.norm_eps));
  }
  if (!m.tie_embeddings) {
    head_ = register_module(
        "head", torch::nn::Linear(torch::nn::LinearOptions(m.dim, options_.vocab_size).bias(false)));
    init::small_(head_->weight, m.dim);
  }
}

torch::Tensor LanguageModelImpl::logits(const ResidualStream& hidden) {
  // The final norm does the last block's pending addition; the sum itself feeds nothing.
  const torch::Tensor normed =
      final_norm_ ? final_norm_->add_and_norm(hidden.stream, hidden.pending).normed : hidden.total();
  return head_ ? head_(normed) : torch::linear(normed, embedding_->weight);
}

torch::Tensor LanguageModelImpl::forward(const torch::Tensor& tokens) {
  check_tokens(tokens, 2, options_.vocab_size, "tokens");
  if (tokens.size(1) < 1) throw InputError("model: tokens has no time steps");
  ResidualStream h{embed_tokens(embedding_->weight, tokens), {}};
  if (options_.model.wavefront_chunks > 1 && tokens.size(1) > 1)
    return logits({run_wavefront(blocks_, h.stream, options_.model.wavefront_chunks, embedding_->weight.options()).y, {}});
  for (ResidualBlock& block : blocks_) h = block->forward_stream(h);
  return logits(h);
}

void LanguageModelImpl::check_state(const ModelState& state) const {
  if (state.size() != blocks_.size()) {
    throw InputError("model: the state has " + std::to_string(state.size()) + " entries for " +
                     std::to_string(blocks_.size()) + " blocks; start from initial_state()");
  }
}

ModelStepOutput LanguageModelImpl::forward_step(const torch::Tensor& tokens_t,
                                                const ModelState& state) {
  check_tokens(tokens_t, 1, options_.vocab_size, "tokens_t");
  check_state(state);
  ModelStepOutput out;
  out.state.reserve(blocks_.size());
  torch::Tensor h = embed_tokens(embedding_->weight, tokens_t);
  for (size_t i = 0; i < blocks_.size(); ++i) {
    StepOutput step = blocks_[i]->forward_step(h, state[i]);
    h = step.y;
    out.state.push_back(std::move(step.state));
  }
  out.logits = logits({h, {}});
  return out;
}

ModelStepOutput LanguageModelImpl::forward_chunk(const torch::Tensor& tokens, const ModelState& state,
                                                 std::optional<int64_t> wavefront_chunks) {
  check_tokens(tokens, 2, options_.vocab_size, "tokens");
  if (tokens.size(1) < 1) throw InputError("model: tokens has no time steps");
  check_state(state);
  const int64_t chunks = wavefront_chunks.value_or(options_.model.wavefront_chunks);
  if (chunks < 0) throw InputError("model: wavefront_chunks must not be negative, got " + std::to_string(chunks));
  ModelStepOutput out;
  torch::Tensor h = embed_tokens(embedding_->weight, tokens);
  if (chunks > 1 && tokens.size(1) > 1) {
    WavefrontOutput wave = run_wavefront(blocks_, h, chunks, embedding_->weight.options(), state);
    h = std::move(wave.y);
    out.state = std::move(wave.states);
  } else {
    out.state.reserve(blocks_.size());
    for (size_t i = 0; i < blocks_.size(); ++i) {
      ChunkOutput chunk = blocks_[i]->forward_chunk(h, state[i]);
      h = std::move(chunk.y);
      out.state.push_back(std::move(chunk.state));
    }
  }
  out.logits = logits({h.select(1, h.size(1) - 1), {}});
  return out;
}

ModelState LanguageModelImpl::initial_state(int64_t batch) const {
  ModelState state;
  for (const ResidualBlock& block : blocks_)
    state.push_back(block->initial_state(batch, embedding_->weight.options()));
  return state;
}

double LanguageModelImpl::forward_flops_per_token(int64_t context) const {
  double flops = 2.0 * double(options_.model.dim) * double(options_.vocab_size);  // the head
  for (const ResidualBlock& block : blocks_) flops += block->forward_flops_per_token(context);
  return flops;
}

double LanguageModelImpl::training_flops_per_token(int64_t context) const {
  return 3.0 * forward_flops_per_token(context);
}

}  // namespace flashtrain::models

// The language model: token embedding, a stack of residual blocks of any kinds,
// a final norm and a head tied to the embedding or not; or, with structure
// kPlain, token embedding, plain lstm / gru / elman layers and the head, no norm.
//
// Parameter names (checkpoint and export keys; stable):
//   embedding.weight        [vocab, d_model]
//   blocks.<i>.<block parameter>   see residual_block.h and the mixer headers,
//                                  e.g. blocks.0.mixer.r, blocks.2.ffn.up.weight
//   final_norm.weight       [d_model]          residual structure only
//   head.weight             [vocab, d_model]   only when not tied
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <optional>
#include <vector>

#include "flashtrain/models/block_state.h"
#include "flashtrain/models/norm.h"
#include "flashtrain/models/options.h"
#include "flashtrain/models/residual_block.h"

namespace flashtrain::models {

// One BlockState per block.
using ModelState = std::vector<BlockState>;

struct ModelStepOutput {
  torch::Tensor logits;  // [B, vocab]
  ModelState state;
};

// Init: embedding (and an untied head) N(0, 2/(5 d_model)) (small init, as xLSTM);
// the blocks' schemes are in README.md.
class LanguageModelImpl : public torch::nn::Module {
 public:
  explicit LanguageModelImpl(LanguageModelOptions options);

  // tokens [B, T] (int64 or int32) -> logits [B, T, vocab].
  torch::Tensor forward(const torch::Tensor& tokens);
  // tokens_t [B] after `state` -> logits [B, vocab] and the state after them.
  // Stepping through a sequence from initial_state equals forward on it.
  ModelStepOutput forward_step(const torch::Tensor& tokens_t, const ModelState& state);
  // tokens [B, T] after `state` -> logits [B, vocab] of the last token and the
  // state after it: what T forward_steps give, in one pass over the chunk where
  // the blocks have a parallel form (the recurrent ones: a prompt's prefill).
  // wavefront_chunks: the blocks as a wavefront over that many chunks of the
  // tokens (options().model.wavefront_chunks where not given; 0 or 1: block after
  // block), the same result with several blocks at work at once.
  ModelStepOutput forward_chunk(const torch::Tensor& tokens, const ModelState& state,
                                std::optional<int64_t> wavefront_chunks = std::nullopt);
  // The state before the first token, on the device and dtype of the parameters.
  ModelState initial_state(int64_t batch) const;

  // Forward FLOPs per token at `context` tokens of context: blocks + head.
  double forward_flops_per_token(int64_t context) const;
  // Forward and backward: 3x forward (the backward is two matmuls per forward one).
  double training_flops_per_token(int64_t context) const;

  const LanguageModelOptions& options() const { return options_; }
  const std::vector<ResidualBlock>& blocks() const { return blocks_; }

 private:
  torch::Tensor logits(const ResidualStream& hidden);
  // One BlockState per block, or an InputError.
  void check_state(const ModelState& state) const;

  LanguageModelOptions options_;
  torch::nn::Embedding embedding_{nullptr};
  torch::nn::ModuleList block_list_{nullptr};
  std::vector<ResidualBlock> blocks_;
  Norm final_norm_{nullptr};
  torch::nn::Linear head_{nullptr};
};
TORCH_MODULE(LanguageModel);

}  // namespace flashtrain::models

// The sequence-mixing half of a block: the part that looks across time and the
// only part that carries state. ResidualBlock wraps a mixer in its pre-norm
// residual and checks inputs before they reach it.
#pragma once

#include <torch/nn/module.h>

#include "flashtrain/models/block_state.h"

namespace flashtrain::models {

class Mixer : public torch::nn::Module {
 public:
  // x [B, T, d_model] -> [B, T, d_model], starting from the zero state.
  virtual torch::Tensor forward(const torch::Tensor& x) = 0;
  // One token x_t [B, d_model] after `state` -> y_t [B, d_model] and the new
  // state. Stepping through a sequence equals forward on it.
  virtual StepOutput forward_step(const torch::Tensor& x_t, const BlockState& state) = 0;
  // A chunk x [B, T, d_model] after `state` -> y [B, T, d_model] and the state
  // after its last token: what T forward_steps give (a prompt's prefill). This
  // one steps; a mixer with a parallel form over time overrides it.
  virtual ChunkOutput forward_chunk(const torch::Tensor& x, const BlockState& state);
  // The state before the first token (zeros; an empty KV cache).
  virtual BlockState initial_state(int64_t batch, const torch::TensorOptions& options) const = 0;
  // Forward FLOPs per token (2 per multiply-add of matmuls, convolutions and
  // scans; elementwise work not counted) with `context` tokens of context.
  virtual double forward_flops_per_token(int64_t context) const = 0;
};

}  // namespace flashtrain::models

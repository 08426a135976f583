// The mixer of the Llama-style Transformer block: causal multi-head attention
// with rotary positions, through at::scaled_dot_product_attention.
#pragma once

#include <torch/nn/modules/linear.h>

#include <array>
#include <utility>

#include "flashtrain/models/mixer.h"
#include "flashtrain/models/options.h"

namespace flashtrain::models {

// Parameters: "wq.weight", "wk.weight", "wv.weight", "wo.weight" [d_model, d_model],
// no biases. State: the KV cache "keys", "values" [B, heads, tokens so far, head_dim]
// (keys already rotated); the next token's position is its length.
class AttentionMixer : public Mixer {
 public:
  AttentionMixer(const BlockContext& context, const TransformerBlockOptions& options);

  torch::Tensor forward(const torch::Tensor& x) override;
  StepOutput forward_step(const torch::Tensor& x_t, const BlockState& state) override;
  ChunkOutput forward_chunk(const torch::Tensor& x, const BlockState& state) override;
  BlockState initial_state(int64_t batch, const torch::TensorOptions& options) const override;
  // Projections 8 d^2 plus q.k and attention-weighted values over the whole
  // context, 4 d * context (PaLM's convention: the causal mask's saving is not
  // subtracted).
  double forward_flops_per_token(int64_t context) const override;

 private:
  // x [B, T, d_model] at positions first.. -> q, k, v [B, heads, T, head_dim].
  std::array<torch::Tensor, 3> project(const torch::Tensor& x, int64_t first_position);
  // attention output [B, heads, T, head_dim] -> [B, T, d_model].
  torch::Tensor output(const torch::Tensor& attended);
  // The state's keys and values [B, heads, tokens so far, head_dim], checked.
  std::pair<torch::Tensor, torch::Tensor> kv_cache(const BlockState& state, int64_t batch) const;

  int64_t d_model_, num_heads_, head_dim_;
  double rope_theta_;
  torch::nn::Linear wq_{nullptr}, wk_{nullptr}, wv_{nullptr}, wo_{nullptr};
};

}  // namespace flashtrain::models

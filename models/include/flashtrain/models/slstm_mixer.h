// The mixer of the xLSTM sLSTM block: optional causal depthwise conv + SiLU
// feeding the i and f gates, head-wise gate projections, the sLSTM op, a
// per-head norm. No output projection: the hidden width is d_model.
#pragma once

#include "flashtrain/models/causal_conv.h"
#include "flashtrain/models/headwise_linear.h"
#include "flashtrain/models/mixer.h"
#include "flashtrain/models/norm.h"
#include "flashtrain/models/options.h"

namespace flashtrain::models {

// Parameters (N heads, D = d_model / N, K the conv kernel):
//   "conv.weight" [d_model, 1, K], "conv.bias" [d_model]   (when K > 0)
//   "igate.weight", "fgate.weight", "zgate.weight", "ogate.weight"  [N, D, D]
//   "r" [4, N, D, D], "b" [4, N, D]                        gate order i, f, z, o
//   "group_norm.weight" [d_model]
// State: "states" [B, 4, N, D] (h, c, n, m) and, with a conv,
// "conv_window" [B, K-1, d_model].
class SlstmMixer : public Mixer {
 public:
  SlstmMixer(const BlockContext& context, const SlstmBlockOptions& options);

  torch::Tensor forward(const torch::Tensor& x) override;
  StepOutput forward_step(const torch::Tensor& x_t, const BlockState& state) override;
  // One call of the op over the chunk, from the state.
  ChunkOutput forward_chunk(const torch::Tensor& x, const BlockState& state) override;
  BlockState initial_state(int64_t batch, const torch::TensorOptions& options) const override;
  double forward_flops_per_token(int64_t context) const override;

 private:
  // x and the conv path's output x_conv, both [B, T, d_model] -> Wx [B, T, 4, N, D].
  torch::Tensor gate_inputs(const torch::Tensor& x, const torch::Tensor& x_conv);
  // h [B, T, N, D] -> [B, T, d_model].
  torch::Tensor output(const torch::Tensor& h);
  flashrnn::Options op_options() const;

  int64_t d_model_, num_heads_, head_dim_;
  flashrnn::Backend backend_;
  bool recompute_;
  CausalDepthwiseConv conv_{nullptr};
  HeadwiseLinear igate_{nullptr}, fgate_{nullptr}, zgate_{nullptr}, ogate_{nullptr};
  torch::Tensor r_, b_;
  HeadwiseNorm group_norm_{nullptr};
};

}  // namespace flashtrain::models

// The call of the recurrent op that both recurrent mixers make.
#pragma once

#include <torch/torch.h>

#include <optional>

#include "flashrnn/flashrnn.h"

namespace flashtrain::models {

// flashrnn::flashrnn with R, b and the initial states cast to Wx's dtype. The op
// takes one dtype, and under autocast the input projection yields bf16/fp16 Wx
// while the parameters stay float32 (autocast does not reach custom ops); the
// cast is differentiable, so the float32 parameters get their gradients.
inline flashrnn::Result run_cell(const torch::Tensor& wx, const torch::Tensor& r,
                                 const torch::Tensor& b,
                                 const std::optional<torch::Tensor>& initial_states,
                                 const flashrnn::Options& options) {
  const auto dtype = wx.scalar_type();
  std::optional<torch::Tensor> initial;
  if (initial_states) initial = initial_states->to(dtype);
  return flashrnn::flashrnn(wx, r.to(dtype), b.to(dtype), initial, options);
}

}  // namespace flashtrain::models

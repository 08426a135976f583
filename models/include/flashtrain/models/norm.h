// Normalisation layers: the pre-norm of every block and the sLSTM's per-head norm.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include "flashtrain/models/options.h"

namespace flashtrain::models {

// x + delta and its norm (NormImpl::add_and_norm).
struct AddedAndNormed {
  torch::Tensor sum;
  torch::Tensor normed;
};

// LayerNorm (weight, no bias) or RMSNorm over the last dimension. Parameter:
// "weight" [dim], init ones. The LayerNorm's output is in the compute dtype
// (autocast's where it is on: flashrnn::headwise_norm, one kernel on a GPU).
class NormImpl : public torch::nn::Module {
 public:
  NormImpl(int64_t dim, NormKind kind, double eps);
  torch::Tensor forward(const torch::Tensor& x);
  // The pre-norm of a residual stream x to which a sublayer's output delta
  // is still to be added: x + delta and forward(x + delta). The LayerNorm
  // does both in one pass (flashrnn::residual_add_norm: the same values to
  // the bit); RMSNorm adds, then normalises. Undefined delta: x and forward(x).
  AddedAndNormed add_and_norm(const torch::Tensor& x, const torch::Tensor& delta);
  NormKind kind() const { return kind_; }

 private:
  NormKind kind_;
  double eps_;
  torch::Tensor weight_;
};
TORCH_MODULE(Norm);

// xLSTM's group norm: a layer norm over each head's D units separately, then a
// weight over all N*D. Input [..., N, D], output [..., N*D]. Parameter:
// "weight" [N*D], init ones. The output has the input's dtype (statistics in
// float32: flashrnn::headwise_norm, one kernel on a GPU).
class HeadwiseNormImpl : public torch::nn::Module {
 public:
  HeadwiseNormImpl(int64_t num_heads, int64_t head_dim, double eps);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  int64_t num_heads_, head_dim_;
  double eps_;
  torch::Tensor weight_;
};
TORCH_MODULE(HeadwiseNorm);

}  // namespace flashtrain::models

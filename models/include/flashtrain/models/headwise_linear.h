// A block-diagonal linear map: each head's slice of the input feeds only that
// head's slice of the output (xLSTM's LinearHeadwiseExpand).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

namespace flashtrain::models {

// [..., N*in] -> [..., N*out]; head n's output is weight[n] @ (head n's input).
// Parameter: "weight" [N, out, in], no bias; the owner initialises it.
class HeadwiseLinearImpl : public torch::nn::Module {
 public:
  HeadwiseLinearImpl(int64_t num_heads, int64_t in_per_head, int64_t out_per_head);
  torch::Tensor forward(const torch::Tensor& x);
  const torch::Tensor& weight() const { return weight_; }

 private:
  int64_t num_heads_, in_per_head_, out_per_head_;
  torch::Tensor weight_;
};
TORCH_MODULE(HeadwiseLinear);

}  // namespace flashtrain::models

// The causal depthwise convolution + SiLU in front of the sLSTM's i and f gates.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <utility>

namespace flashtrain::models {

// y[t, c] = silu(bias[c] + sum_k weight[c, 0, k] * x[t - (K-1) + k, c]), zeros
// before the first token (flashrnn::causal_conv_silu: one kernel on a GPU). Parameters: "weight" [C, 1, K] (torch's Conv1d layout, so an
// export loads into nn.Conv1d(groups=C)), "bias" [C]; both U(-1/sqrt K, 1/sqrt K)
// as nn.Conv1d.
class CausalDepthwiseConvImpl : public torch::nn::Module {
 public:
  CausalDepthwiseConvImpl(int64_t channels, int64_t kernel_size);
  // [B, T, C] -> [B, T, C].
  torch::Tensor forward(const torch::Tensor& x);
  // One token: x_t [B, C] and the K-1 previous inputs window [B, K-1, C]
  // (oldest first) -> y_t [B, C] and the window after x_t.
  std::pair<torch::Tensor, torch::Tensor> step(const torch::Tensor& x_t,
                                               const torch::Tensor& window);
  int64_t kernel_size() const { return kernel_size_; }

 private:
  int64_t channels_, kernel_size_;
  torch::Tensor weight_, bias_;
};
TORCH_MODULE(CausalDepthwiseConv);

}  // namespace flashtrain::models

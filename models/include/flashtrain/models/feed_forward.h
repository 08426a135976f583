// The gated feed-forward (SwiGLU) that follows the mixer in a block.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include "flashtrain/models/options.h"

namespace flashtrain::models {

// down(silu(gate(x)) * up(x)). Parameters: "gate.weight", "up.weight" [H, d],
// "down.weight" [d, H], no biases; H = hidden_dim(d, options).
// Init: gate and up small (N(0, 2/(5d))), down by depth (N(0, (2/(L sqrt d))^2)).
class GatedFeedForwardImpl : public torch::nn::Module {
 public:
  GatedFeedForwardImpl(const BlockContext& context, const FeedForwardOptions& options);
  torch::Tensor forward(const torch::Tensor& x);

  // projection_factor * d_model rounded up to a multiple of options.multiple_of.
  static int64_t hidden_dim(int64_t d_model, const FeedForwardOptions& options);
  double forward_flops_per_token() const;

 private:
  int64_t d_model_, hidden_dim_;
  torch::nn::Linear gate_{nullptr}, up_{nullptr}, down_{nullptr};
};
TORCH_MODULE(GatedFeedForward);

}  // namespace flashtrain::models

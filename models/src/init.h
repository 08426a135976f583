// Init schemes the blocks share (those of xLSTM; README.md lists who uses which).
#pragma once

#include <torch/nn/init.h>
#include <torch/torch.h>

#include <cmath>

namespace flashtrain::models::init {

// "Small init" (Nguyen & Salazar 2019): N(0, 2 / (5 dim)). Input projections.
inline void small_(torch::Tensor w, int64_t dim) {
  torch::nn::init::normal_(w, 0.0, std::sqrt(2.0 / (5.0 * double(dim))));
}

// "Wang init" (GPT-J): N(0, (2 / (num_blocks sqrt(dim)))^2). Projections that
// write into the residual stream, so the stream's variance stays bounded with depth.
inline void by_depth_(torch::Tensor w, int64_t dim, int64_t num_blocks) {
  torch::nn::init::normal_(w, 0.0, 2.0 / (double(num_blocks) * std::sqrt(double(dim))));
}

// U(-bound, bound); bound 0 gives zeros.
inline void uniform_(torch::Tensor w, double bound) {
  if (bound == 0.0) {
    torch::nn::init::zeros_(w);
  } else {
    torch::nn::init::uniform_(w, -bound, bound);
  }
}

// Fills bias[slot] ([N, D]) with values spaced evenly over [low, high] along D,
// the same for every head.
inline void spaced_gate_bias_(torch::Tensor& bias, int64_t slot, double low, double high) {
  torch::NoGradGuard no_grad;
  const int64_t head_dim = bias.size(2);
  bias[slot].copy_(torch::linspace(low, high, head_dim, bias.options()).expand_as(bias[slot]));
}

}  // namespace flashtrain::models::init

// The sLSTM block's four head-wise gate projections as one autograd op that
// writes the recurrent op's input layout directly.
#pragma once

#include <torch/types.h>

namespace flashtrain::models {

// Wx[b, t, g, n, :] = weights[g, n] @ source_g[b, t, n·D : (n+1)·D], with
// source_g = x_if for the gates g = 0, 1 (i, f) and x_zo for g = 2, 3 (z, o).
//   x_if, x_zo [B, T, N·D] (one dtype), weights [4, N, D, D] (out, in)
//   -> Wx [B, T, 4, N, D] in x's dtype (weights are cast to it)
// Eight strided batched GEMMs forward and back (a batch of N heads each): no
// copy of the inputs into heads-first order and none of the output into the
// op's layout. Gradients flow to x_if, x_zo and weights.
torch::Tensor headwise_gate_projection(const torch::Tensor& x_if, const torch::Tensor& x_zo,
                                       const torch::Tensor& weights);

}  // namespace flashtrain::models

// The memory-bound layers around the recurrent op that stock ATen kernels
// serve badly at a language model's shapes (one kernel each way where ATen
// runs several), as autograd ops with CUDA kernels of ours:
//
//   headwise_norm(x, weight, num_heads, eps, out_dtype)
//     x [..., H·D] → each head's D values (the last dim cut into H groups)
//     normalised to zero mean and unit variance, times weight [H·D]. This is
//     xLSTM's group norm, and with H = 1 a layer norm without bias. The
//     output has out_dtype (default x's): a float32 residual stream is
//     normalised straight into autocast's bf16 / fp16, without a float32
//     copy to cast. (ATen's layer_norm over D = 64 runs one block per row;
//     here a row is a group of lanes holding it in registers.)
//
//   residual_add_norm(x, delta, weight, num_heads, eps, out_dtype)
//     → {sum = x + delta, normed = headwise_norm(sum, ...)}: the addition of
//     a sublayer's output to a pre-norm residual stream and the next norm, in
//     one pass; the sum is the stream the next addition reads. The backward
//     adds the norm's input gradient to the sum's own and writes x's (x's
//     dtype) and delta's (delta's) in one pass. Values and gradients are those
//     of `x + delta` (ATen's add) followed by headwise_norm, to the bit; the
//     kernels take delta of the output's dtype (a float32 stream plus a bf16
//     sublayer output, normalised into bf16), else the two ops run. An
//     undefined delta adds nothing (sum is x).
//
//   silu_mul(gate, up)
//     → silu(gate) · up, the gated feed-forward's activation (SwiGLU): one
//     pass each way, keeping gate and up for the backward (ATen's silu and
//     mul keep silu(gate) too). gate and up of one shape and dtype.
//
//   causal_conv_silu(x, weight, bias)
//     x [B, T, C], weight [C, K] (or nn.Conv1d's [C, 1, K]), bias [C] →
//     y[b, t, c] = silu(bias[c] + Σ_k weight[c, k] · x[b, t − K + 1 + k, c]),
//     inputs before t = 0 being zero: a depthwise convolution that sees the
//     past only. Computed in [B, T, C] as it is stored (conv1d wants channels
//     first: two transposed copies and a padded one).
//
// The conv's output has x's dtype; statistics, sums and gradients are
// accumulated in float32. Gradients flow to x, weight and bias (x's gradient
// in x's dtype, weight and bias gradients in their own). CUDA tensors of
// float32 / bfloat16 / float16 run the kernels where the shape suits them
// (even head dims ≤ 1024; an even number of channels and K ≤ 8); anything else (the CPU, float64, other shapes) runs the
// same math as ATen ops, which is also the reference the kernels are tested
// against.
#pragma once

#include <cstdint>
#include <optional>

#include <ATen/Tensor.h>

#include "flashrnn/flashrnn.h"  // InputError

namespace flashrnn {

at::Tensor headwise_norm(const at::Tensor& x, const at::Tensor& weight, int64_t num_heads, double eps,
                         std::optional<at::ScalarType> out_dtype = std::nullopt);

struct ResidualNorm {
  at::Tensor sum;     // x + delta, x's dtype (ATen's type promotion off the kernels)
  at::Tensor normed;  // out_dtype (default x's)
};
ResidualNorm residual_add_norm(const at::Tensor& x, const at::Tensor& delta, const at::Tensor& weight,
                               int64_t num_heads, double eps, std::optional<at::ScalarType> out_dtype = std::nullopt);

at::Tensor silu_mul(const at::Tensor& gate, const at::Tensor& up);

at::Tensor causal_conv_silu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias);

// The ATen compositions: what the kernels compute, for tests and benchmarks.
at::Tensor headwise_norm_reference(const at::Tensor& x, const at::Tensor& weight, int64_t num_heads,
                                   double eps, std::optional<at::ScalarType> out_dtype = std::nullopt);
at::Tensor silu_mul_reference(const at::Tensor& gate, const at::Tensor& up);
at::Tensor causal_conv_silu_reference(const at::Tensor& x, const at::Tensor& weight,
                                      const at::Tensor& bias);

}  // namespace flashrnn

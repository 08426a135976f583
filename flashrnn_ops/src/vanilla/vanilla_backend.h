// The vanilla backend: a time loop of torch matmuls plus the cells' pointwise
// step (pointwise_dispatch.h), on the CPU or a GPU. It is the reference the
// other backends are tested against, and the fallback for any shape.
//
// Internal layout is time-major with states per batch row: [T, B, S, N, D].
// Tensors here are already in the compute type (float, or double for double input).
#pragma once

#include <ATen/Tensor.h>

#include "flashrnn/flashrnn.h"

namespace flashrnn::vanilla {

struct ForwardInputs {
  Cell cell;
  at::Tensor wx;     // [B, T, Gx, N, D] contiguous
  at::Tensor r;      // [Gx, N, D, D]
  at::Tensor b;      // [Gb, N, D]
  at::Tensor s0;     // [B, S, N, D]
  at::Tensor reset;  // [B, T] bool, or undefined
  double forward_clip = 0.0;
};

struct ForwardOutputs {
  at::Tensor states;  // [T, B, S, N, D]
  at::Tensor cache;   // [T, B, C, N, D]
};

struct Gradients {
  at::Tensor d_wx;  // [B, T, Gx, N, D]
  at::Tensor d_r;   // [Gx, N, D, D]
  at::Tensor d_b;   // [Gb, N, D]
  at::Tensor d_s0;  // [B, S, N, D]
};

ForwardOutputs forward(const ForwardInputs& in);

// d_states: total external gradient of every step's states, [T, B, S, N, D].
Gradients backward(const ForwardInputs& in, const ForwardOutputs& out, const at::Tensor& d_states,
                   bool gradient_recurrent_cut, double gradient_recurrent_clip);

}  // namespace flashrnn::vanilla

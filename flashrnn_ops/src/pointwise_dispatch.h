// Runs one pointwise step on the device of its tensors: a parallel loop on the
// CPU, a kernel on the current CUDA stream on the GPU.
#pragma once

#include <ATen/Tensor.h>

#include "flashrnn/flashrnn.h"

namespace flashrnn {

// Tensors are [B, slots, N, D] with contiguous (slot, N, D) inner dims; the batch
// stride may be anything (slices of [B, T, ...] tensors are passed in place).
struct PointwiseForwardTensors {
  at::Tensor wx, rh, bias, s_prev, s_next, cache;
};

struct PointwiseBackwardTensors {
  at::Tensor cache, s_prev, s_next, ds;  // inputs
  at::Tensor dwx, drh, db, ds_prev;      // outputs
};

void pointwise_forward(Cell cell, const PointwiseForwardTensors& t, double forward_clip);
void pointwise_backward(Cell cell, const PointwiseBackwardTensors& t);

}  // namespace flashrnn

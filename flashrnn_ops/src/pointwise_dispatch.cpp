#include "pointwise_dispatch.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/core/DeviceGuard.h>

#include "cells/registry.h"
#include "pointwise_cuda.h"

namespace flashrnn {
namespace {

// A [B, slots, N, D] tensor as Slots<T>; checks the layout the element code
// assumes. Strides of size-1 dims are arbitrary in torch and never used.
template <class T>
Slots<T> slots_of(const at::Tensor& t) {
  const auto dense = [&](int dim, int64_t stride) { return t.size(dim) == 1 || t.stride(dim) == stride; };
  TORCH_INTERNAL_ASSERT(t.dim() == 4 && dense(3, 1) && dense(2, t.size(3)) &&
                            dense(1, t.size(2) * t.size(3)),
                        "pointwise: tensor is not [B, slots, N, D] with a dense inner part");
  return {static_cast<T*>(t.data_ptr()), t.stride(0)};
}

template <class Fn>
void for_each_element(int64_t elements, Fn&& fn) {
  at::parallel_for(0, elements, 2048, [&](int64_t begin, int64_t end) {
    for (int64_t e = begin; e < end; ++e) fn(e);
  });
}

void check_cuda(cudaError_t status, const char* what) {
  TORCH_CHECK(status == cudaSuccess, "flashrnn: ", what, " failed: ", cudaGetErrorString(status));
}

template <class Cell, class T>
void forward_typed(const PointwiseForwardTensors& t, double forward_clip) {
  PointwiseForwardParams<T> p;
  p.batch = t.s_next.size(0);
  p.nd = t.s_next.size(2) * t.s_next.size(3);
  p.wx = slots_of<const T>(t.wx);
  p.rh = slots_of<const T>(t.rh);
  p.bias = t.bias.const_data_ptr<T>();
  p.s_prev = slots_of<const T>(t.s_prev);
  p.s_next = slots_of<T>(t.s_next);
  p.cache = slots_of<T>(t.cache);
  p.forward_clip = static_cast<T>(forward_clip);
  if (t.s_next.is_cuda()) {
    const c10::DeviceGuard guard(t.s_next.device());
    check_cuda(launch_pointwise_forward<Cell, T>(p, at::cuda::getCurrentCUDAStream()),
               "pointwise forward kernel");
  } else {
    for_each_element(p.batch * p.nd, [&](int64_t e) { pointwise_forward_element<Cell>(p, e); });
  }
}

template <class Cell, class T>
void backward_typed(const PointwiseBackwardTensors& t) {
  PointwiseBackwardParams<T> p;
  p.batch = t.ds.size(0);
  p.nd = t.ds.size(2) * t.ds.size(3);
  p.cache = slots_of<const T>(t.cache);
  p.s_prev = slots_of<const T>(t.s_prev);
  p.s_next = slots_of<const T>(t.s_next);
  p.ds = slots_of<const T>(t.ds);
  p.dwx = slots_of<T>(t.dwx);
  p.drh = slots_of<T>(t.drh);
  p.db = slots_of<T>(t.db);
  p.ds_prev = slots_of<T>(t.ds_prev);
  if (t.ds.is_cuda()) {
    const c10::DeviceGuard guard(t.ds.device());
    check_cuda(launch_pointwise_backward<Cell, T>(p, at::cuda::getCurrentCUDAStream()),
               "pointwise backward kernel");
  } else {
    for_each_element(p.batch * p.nd, [&](int64_t e) { pointwise_backward_element<Cell>(p, e); });
  }
}

// The element code runs in float or double: the compute type of the backends.
template <class Fn>
void dispatch_compute_type(at::ScalarType type, Fn&& fn) {
  if (type == at::kDouble) return fn(double{});
  TORCH_INTERNAL_ASSERT(type == at::kFloat, "pointwise: compute type must be float or double");
  fn(float{});
}

}  // namespace

void pointwise_forward(Cell cell, const PointwiseForwardTensors& t, double forward_clip) {
  cells::dispatch_cell(cell, [&](auto cell_type) {
    dispatch_compute_type(t.s_next.scalar_type(), [&](auto value) {
      forward_typed<decltype(cell_type), decltype(value)>(t, forward_clip);
    });
  });
}

void pointwise_backward(Cell cell, const PointwiseBackwardTensors& t) {
  cells::dispatch_cell(cell, [&](auto cell_type) {
    dispatch_compute_type(t.ds.scalar_type(), [&](auto value) {
      backward_typed<decltype(cell_type), decltype(value)>(t);
    });
  });
}

}  // namespace flashrnn

// The alternating backend's kernels (see step_args.h), instantiated per storage
// type in step_kernels_<type>.cu.
#pragma once

#include "alternating/step_args.h"
#include "cells/all.h"
#include "pointwise_kernels.cuh"

namespace flashrnn::alternating {

__device__ inline void fill_gemm_pointers(const GemmOperands& op, const GemmPointers& dst,
                                          int64_t steps, int64_t i) {
  const auto offset = [](const void* base, int64_t elements, int bytes) {
    return static_cast<const char*>(base) + elements * bytes;
  };
  if (i < op.entries) {
    dst.a[i] = offset(op.a, i * op.a_entry_stride, op.a_bytes);
    dst.c[i] = const_cast<char*>(offset(op.c, i * op.c_entry_stride, op.c_bytes));
  }
  if (i < steps * op.entries) {
    const int64_t t = i / op.entries, entry = i % op.entries;
    const int64_t head = entry / op.groups, group = entry % op.groups;
    dst.b[i] = offset(op.b, t * op.b_step_stride + head * op.b_head_stride +
                                group * op.b_group_stride, op.b_bytes);
  }
}

template <class S>
__global__ void forward_setup_kernel(ForwardArgs<S> args, DeviceSlots<ForwardArgs<S>> dst) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i == 0) *dst.args = args;
  const Extent& x = args.step.extent;
  fill_gemm_pointers(args.operands, dst.gemm, x.steps, i);
  if (i < x.elements_per_step()) {  // h_gemm[0] = h of the initial states
    const detail::Index at(x, i);
    args.step.h_gemm.at(0, at.b, 0, at.n, at.d) =
        static_cast<S>(args.step.s0.at(0, at.b, 0, at.n, at.d));
  }
}

template <class S>
__global__ void backward_setup_kernel(BackwardArgs<S> args, DeviceSlots<BackwardArgs<S>> dst) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i == 0) *dst.args = args;
  const Extent& x = args.step.extent;
  fill_gemm_pointers(args.operands, dst.gemm, x.steps, i);
}

inline unsigned setup_blocks(const Extent& x, const GemmOperands& op) {
  const int64_t work = std::max(x.steps * op.entries, x.elements_per_step());
  return unsigned((work + kPointwiseThreads - 1) / kPointwiseThreads);
}

template <class S>
cudaError_t launch_forward_setup(const ForwardArgs<S>& args, const DeviceSlots<ForwardArgs<S>>& dst,
                                 cudaStream_t stream) {
  forward_setup_kernel<S><<<setup_blocks(args.step.extent, args.operands), kPointwiseThreads, 0, stream>>>(args, dst);
  return cudaGetLastError();
}

template <class S>
cudaError_t launch_backward_setup(const BackwardArgs<S>& args,
                                  const DeviceSlots<BackwardArgs<S>>& dst, cudaStream_t stream) {
  backward_setup_kernel<S><<<setup_blocks(args.step.extent, args.operands), kPointwiseThreads, 0, stream>>>(args, dst);
  return cudaGetLastError();
}

template <class Cell, class S>
cudaError_t launch_forward_step(const ForwardArgs<S>* args, const Extent& extent, int64_t t,
                                cudaStream_t stream) {
  const ForwardStepParams<float, S>* p = &args->step;  // address only: args is device memory
  forward_step_kernel<Cell, float, S><<<pointwise_blocks(extent), kPointwiseThreads, 0, stream>>>(p, t);
  return cudaGetLastError();
}

template <class Cell, class S>
cudaError_t launch_backward_step(const BackwardArgs<S>* args, const Extent& extent, int64_t t,
                                 cudaStream_t stream) {
  const BackwardStepParams<float, S>* p = &args->step;
  backward_step_kernel<Cell, float, S><<<pointwise_blocks(extent), kPointwiseThreads, 0, stream>>>(p, t);
  return cudaGetLastError();
}

template <class Cell, class S>
cudaError_t launch_initial_state_gradient(const BackwardArgs<S>* args, const Extent& extent,
                                          cudaStream_t stream) {
  const BackwardStepParams<float, S>* p = &args->step;
  initial_state_gradient_kernel<Cell, float, S>
      <<<pointwise_blocks(extent), kPointwiseThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

#define FLASHRNN_ALTERNATING_INSTANTIATE_CELL(CELL, S)                                        \
  template cudaError_t launch_forward_step<cells::CELL, S>(const ForwardArgs<S>*,             \
                                                           const Extent&, int64_t,            \
                                                           cudaStream_t);                     \
  template cudaError_t launch_backward_step<cells::CELL, S>(const BackwardArgs<S>*,           \
                                                            const Extent&, int64_t,           \
                                                            cudaStream_t);                    \
  template cudaError_t launch_initial_state_gradient<cells::CELL, S>(const BackwardArgs<S>*,  \
                                                                     const Extent&,           \
                                                                     cudaStream_t);

#define FLASHRNN_ALTERNATING_INSTANTIATE(S)                                                    \
  template cudaError_t launch_forward_setup<S>(const ForwardArgs<S>&,                         \
                                               const DeviceSlots<ForwardArgs<S>>&, cudaStream_t); \
  template cudaError_t launch_backward_setup<S>(const BackwardArgs<S>&,                       \
                                                const DeviceSlots<BackwardArgs<S>>&,          \
                                                cudaStream_t);                                \
  FLASHRNN_FOR_EACH_CELL(FLASHRNN_ALTERNATING_INSTANTIATE_CELL, S)

}  // namespace flashrnn::alternating

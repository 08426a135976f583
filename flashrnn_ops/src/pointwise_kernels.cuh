// CUDA kernels of the pointwise step: one thread per (b, n, d) element.
// Params come by value (vanilla) or from device memory (the alternating
// backend's CUDA graphs, whose tensors change from call to call).
#pragma once

#include <cuda_runtime.h>

#include "pointwise.h"

namespace flashrnn {

constexpr int kPointwiseThreads = 256;

inline unsigned pointwise_blocks(const Extent& extent) {
  return unsigned((extent.elements_per_step() + kPointwiseThreads - 1) / kPointwiseThreads);
}

template <class P>
__device__ __forceinline__ const P& params_of(const P& p) { return p; }
template <class P>
__device__ __forceinline__ const P& params_of(const P* p) { return *p; }

template <class Cell, class T, class S, class ParamsArg>
__global__ void forward_step_kernel(ParamsArg params, int64_t t) {
  const ForwardStepParams<T, S>& p = params_of(params);
  const int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e < p.extent.elements_per_step()) forward_step_element<Cell>(p, t, e);
}

template <class Cell, class T, class S, class ParamsArg>
__global__ void backward_step_kernel(ParamsArg params, int64_t t) {
  const BackwardStepParams<T, S>& p = params_of(params);
  const int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e < p.extent.elements_per_step()) backward_step_element<Cell>(p, t, e);
}

template <class Cell, class T, class S, class ParamsArg>
__global__ void initial_state_gradient_kernel(ParamsArg params) {
  const BackwardStepParams<T, S>& p = params_of(params);
  const int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e < p.extent.elements_per_step()) initial_state_gradient_element<Cell>(p, e);
}

}  // namespace flashrnn

#include "vanilla/pointwise_launch.h"

#include "cells/all.h"
#include "pointwise_kernels.cuh"

namespace flashrnn::vanilla {

template <class Cell, class T>
cudaError_t launch_forward_step(const ForwardStepParams<T, T>& p, int64_t t, cudaStream_t stream) {
  forward_step_kernel<Cell, T, T><<<pointwise_blocks(p.extent), kPointwiseThreads, 0, stream>>>(p, t);
  return cudaGetLastError();
}

template <class Cell, class T>
cudaError_t launch_backward_step(const BackwardStepParams<T, T>& p, int64_t t, cudaStream_t stream) {
  backward_step_kernel<Cell, T, T><<<pointwise_blocks(p.extent), kPointwiseThreads, 0, stream>>>(p, t);
  return cudaGetLastError();
}

template <class Cell, class T>
cudaError_t launch_initial_state_gradient(const BackwardStepParams<T, T>& p, cudaStream_t stream) {
  initial_state_gradient_kernel<Cell, T, T>
      <<<pointwise_blocks(p.extent), kPointwiseThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

#define FLASHRNN_INSTANTIATE(CELL, T)                                                       \
  template cudaError_t launch_forward_step<cells::CELL, T>(const ForwardStepParams<T, T>&,  \
                                                           int64_t, cudaStream_t);          \
  template cudaError_t launch_backward_step<cells::CELL, T>(const BackwardStepParams<T, T>&, \
                                                            int64_t, cudaStream_t);         \
  template cudaError_t launch_initial_state_gradient<cells::CELL, T>(                       \
      const BackwardStepParams<T, T>&, cudaStream_t);

FLASHRNN_FOR_EACH_CELL(FLASHRNN_INSTANTIATE, float)
FLASHRNN_FOR_EACH_CELL(FLASHRNN_INSTANTIATE, double)

}  // namespace flashrnn::vanilla

// The pointwise step on the GPU: one thread per (batch row, unit) element.
#include "pointwise_cuda.h"

#include "cells/elman.h"
#include "cells/gru.h"
#include "cells/lstm.h"
#include "cells/slstm.h"

namespace flashrnn {
namespace {

constexpr int kThreads = 256;

template <class Cell, class T>
__global__ void pointwise_forward_kernel(const PointwiseForwardParams<T> params) {
  const int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e < params.batch * params.nd) pointwise_forward_element<Cell>(params, e);
}

template <class Cell, class T>
__global__ void pointwise_backward_kernel(const PointwiseBackwardParams<T> params) {
  const int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e < params.batch * params.nd) pointwise_backward_element<Cell>(params, e);
}

unsigned blocks_for(int64_t elements) {
  return unsigned((elements + kThreads - 1) / kThreads);
}

}  // namespace

template <class Cell, class T>
cudaError_t launch_pointwise_forward(const PointwiseForwardParams<T>& params, cudaStream_t stream) {
  const int64_t elements = params.batch * params.nd;
  if (elements == 0) return cudaSuccess;
  pointwise_forward_kernel<Cell, T><<<blocks_for(elements), kThreads, 0, stream>>>(params);
  return cudaGetLastError();
}

template <class Cell, class T>
cudaError_t launch_pointwise_backward(const PointwiseBackwardParams<T>& params, cudaStream_t stream) {
  const int64_t elements = params.batch * params.nd;
  if (elements == 0) return cudaSuccess;
  pointwise_backward_kernel<Cell, T><<<blocks_for(elements), kThreads, 0, stream>>>(params);
  return cudaGetLastError();
}

#define FLASHRNN_INSTANTIATE_POINTWISE(CELL, T)                                          \
  template cudaError_t launch_pointwise_forward<cells::CELL, T>(                         \
      const PointwiseForwardParams<T>&, cudaStream_t);                                   \
  template cudaError_t launch_pointwise_backward<cells::CELL, T>(                        \
      const PointwiseBackwardParams<T>&, cudaStream_t);

FLASHRNN_INSTANTIATE_POINTWISE(Lstm, float)
FLASHRNN_INSTANTIATE_POINTWISE(Lstm, double)
FLASHRNN_INSTANTIATE_POINTWISE(Slstm, float)
FLASHRNN_INSTANTIATE_POINTWISE(Slstm, double)
FLASHRNN_INSTANTIATE_POINTWISE(Gru, float)
FLASHRNN_INSTANTIATE_POINTWISE(Gru, double)
FLASHRNN_INSTANTIATE_POINTWISE(Elman, float)
FLASHRNN_INSTANTIATE_POINTWISE(Elman, double)

}  // namespace flashrnn

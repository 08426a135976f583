// CUDA launchers of the pointwise step (pointwise_cuda.cu). No torch here: the
// caller passes the stream and checks the returned error.
#pragma once

#include <cuda_runtime_api.h>

#include "pointwise.h"

namespace flashrnn {

template <class Cell, class T>
cudaError_t launch_pointwise_forward(const PointwiseForwardParams<T>& params, cudaStream_t stream);

template <class Cell, class T>
cudaError_t launch_pointwise_backward(const PointwiseBackwardParams<T>& params, cudaStream_t stream);

}  // namespace flashrnn

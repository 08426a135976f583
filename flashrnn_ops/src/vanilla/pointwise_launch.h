// The vanilla backend's pointwise steps on the GPU (params by value). No torch:
// the caller passes the stream and checks the returned error.
#pragma once

#include <cuda_runtime_api.h>

#include "pointwise.h"

namespace flashrnn::vanilla {

template <class Cell, class T>
cudaError_t launch_forward_step(const ForwardStepParams<T, T>& p, int64_t t, cudaStream_t stream);

template <class Cell, class T>
cudaError_t launch_backward_step(const BackwardStepParams<T, T>& p, int64_t t, cudaStream_t stream);

template <class Cell, class T>
cudaError_t launch_initial_state_gradient(const BackwardStepParams<T, T>& p, cudaStream_t stream);

}  // namespace flashrnn::vanilla

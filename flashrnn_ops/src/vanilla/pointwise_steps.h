// Runs the vanilla backend's pointwise steps on the device of its tensors: a
// parallel loop on the CPU, a kernel on the current CUDA stream on a GPU.
#pragma once

#include <c10/core/Device.h>

#include "flashrnn/flashrnn.h"
#include "pointwise.h"

namespace flashrnn::vanilla {

template <class T>
void forward_step(Cell cell, const ForwardStepParams<T, T>& p, int64_t t, c10::Device device);

template <class T>
void backward_step(Cell cell, const BackwardStepParams<T, T>& p, int64_t t, c10::Device device);

template <class T>
void initial_state_gradient(Cell cell, const BackwardStepParams<T, T>& p, c10::Device device);

}  // namespace flashrnn::vanilla

#include "vanilla/pointwise_steps.h"

#include <ATen/Parallel.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/core/DeviceGuard.h>

#include "cells/registry.h"
#include "vanilla/pointwise_launch.h"

namespace flashrnn::vanilla {
namespace {

template <class Fn>
void for_each_element(const Extent& extent, Fn&& fn) {
  at::parallel_for(0, extent.elements_per_step(), 2048, [&](int64_t begin, int64_t end) {
    for (int64_t e = begin; e < end; ++e) fn(e);
  });
}

// Runs on_cpu() or checks the error of launch(stream) on the device's current stream.
template <class OnCpu, class Launch>
void run_on(c10::Device device, const char* what, OnCpu&& on_cpu, Launch&& launch) {
  if (device.is_cpu()) return on_cpu();
  const c10::DeviceGuard guard(device);
  const cudaError_t status = launch(at::cuda::getCurrentCUDAStream().stream());
  TORCH_CHECK(status == cudaSuccess, "flashrnn: ", what, " kernel failed: ",
              cudaGetErrorString(status));
}

}  // namespace

template <class T>
void forward_step(Cell cell, const ForwardStepParams<T, T>& p, int64_t t, c10::Device device) {
  cells::dispatch_cell(cell, [&](auto c) {
    using C = decltype(c);
    run_on(
        device, "forward step",
        [&] { for_each_element(p.extent, [&](int64_t e) { forward_step_element<C>(p, t, e); }); },
        [&](cudaStream_t s) { return launch_forward_step<C, T>(p, t, s); });
  });
}

template <class T>
void backward_step(Cell cell, const BackwardStepParams<T, T>& p, int64_t t, c10::Device device) {
  cells::dispatch_cell(cell, [&](auto c) {
    using C = decltype(c);
    run_on(
        device, "backward step",
        [&] { for_each_element(p.extent, [&](int64_t e) { backward_step_element<C>(p, t, e); }); },
        [&](cudaStream_t s) { return launch_backward_step<C, T>(p, t, s); });
  });
}

template <class T>
void initial_state_gradient(Cell cell, const BackwardStepParams<T, T>& p, c10::Device device) {
  cells::dispatch_cell(cell, [&](auto c) {
    using C = decltype(c);
    run_on(
        device, "initial-state gradient",
        [&] { for_each_element(p.extent, [&](int64_t e) { initial_state_gradient_element<C>(p, e); }); },
        [&](cudaStream_t s) { return launch_initial_state_gradient<C, T>(p, s); });
  });
}

template void forward_step<float>(Cell, const ForwardStepParams<float, float>&, int64_t, c10::Device);
template void forward_step<double>(Cell, const ForwardStepParams<double, double>&, int64_t, c10::Device);
template void backward_step<float>(Cell, const BackwardStepParams<float, float>&, int64_t, c10::Device);
template void backward_step<double>(Cell, const BackwardStepParams<double, double>&, int64_t, c10::Device);
template void initial_state_gradient<float>(Cell, const BackwardStepParams<float, float>&, c10::Device);
template void initial_state_gradient<double>(Cell, const BackwardStepParams<double, double>&, c10::Device);

}  // namespace flashrnn::vanilla

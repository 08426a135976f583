// A time loop captured once into a CUDA graph and replayed with new arguments.
// The graph's root node must be a kernel (the setup kernel of step_args.h): a
// replay replaces that kernel's by-value arguments and launches the graph.
// The loop may call cuBLAS through torch's handle for the current stream.
#pragma once

#include <functional>

#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

namespace flashrnn::alternating {

class CapturedLoop {
 public:
  // Records enqueue(stream) on a side stream of `device` into a graph.
  CapturedLoop(const std::function<void(c10::cuda::CUDAStream)>& enqueue, c10::DeviceIndex device);
  ~CapturedLoop();
  CapturedLoop(const CapturedLoop&) = delete;
  CapturedLoop& operator=(const CapturedLoop&) = delete;

  // Launches the graph on `stream` with the root kernel's arguments replaced
  // (one pointer per kernel parameter, as for cudaLaunchKernel).
  void replay(void** root_kernel_args, cudaStream_t stream);

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  cudaGraphNode_t root_ = nullptr;
  cudaKernelNodeParams root_params_{};
};

}  // namespace flashrnn::alternating

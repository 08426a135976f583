#include "alternating/captured_loop.h"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

namespace flashrnn::alternating {

CapturedLoop::CapturedLoop(const std::function<void(c10::cuda::CUDAStream)>& enqueue,
                           c10::DeviceIndex device) {
  const c10::cuda::CUDAGuard device_guard(device);
  // The legacy default stream cannot be captured: record on a pool stream.
  const c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(false, device);
  {
    // The loops call cuBLAS; creating its handle (and workspace) for this
    // thread and stream is not allowed during capture, so do it now.
    const c10::cuda::CUDAStreamGuard stream_guard(side);
    at::cuda::getCurrentCUDABlasHandle();
  }
  C10_CUDA_CHECK(cudaStreamBeginCapture(side.stream(), cudaStreamCaptureModeThreadLocal));
  try {
    enqueue(side);
  } catch (...) {
    cudaGraph_t aborted = nullptr;
    cudaStreamEndCapture(side.stream(), &aborted);
    if (aborted) cudaGraphDestroy(aborted);
    throw;
  }
  C10_CUDA_CHECK(cudaStreamEndCapture(side.stream(), &graph_));
  C10_CUDA_CHECK(cudaGraphInstantiate(&exec_, graph_, 0));

  size_t roots = 0;
  C10_CUDA_CHECK(cudaGraphGetRootNodes(graph_, nullptr, &roots));
  TORCH_INTERNAL_ASSERT(roots == 1, "captured loop: expected one root node, got ", roots);
  C10_CUDA_CHECK(cudaGraphGetRootNodes(graph_, &root_, &roots));
  cudaGraphNodeType type;
  C10_CUDA_CHECK(cudaGraphNodeGetType(root_, &type));
  TORCH_INTERNAL_ASSERT(type == cudaGraphNodeTypeKernel, "captured loop: root is not a kernel");
  C10_CUDA_CHECK(cudaGraphKernelNodeGetParams(root_, &root_params_));
}

CapturedLoop::~CapturedLoop() {
  if (exec_) cudaGraphExecDestroy(exec_);
  if (graph_) cudaGraphDestroy(graph_);
}

void CapturedLoop::replay(void** root_kernel_args, cudaStream_t stream) {
  cudaKernelNodeParams params = root_params_;
  params.kernelParams = root_kernel_args;
  params.extra = nullptr;
  C10_CUDA_CHECK(cudaGraphExecKernelNodeSetParams(exec_, root_, &params));
  C10_CUDA_CHECK(cudaGraphLaunch(exec_, stream));
}

}  // namespace flashrnn::alternating

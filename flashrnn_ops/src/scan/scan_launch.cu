// The storage-type switch in front of the typed launchers.
#include "scan_launch.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "scan_tiling.h"

namespace flashrnn::scan_kernels {

ScanKernelKnobs scan_kernel_knobs() {
  return {kWarpsPerTile, thread_shape(false).steps, thread_shape(true).steps};
}

size_t scan_workspace_bytes(const ScanShape& shape) {
  return lookback_layout(make_tiling(shape)).total_bytes;
}

cudaError_t launch_scan_forward(const ScanForwardParams& params, void* workspace,
                                cudaStream_t stream) {
  switch (params.shape.dtype) {
    case ScanDtype::kFloat32: return launch_scan_forward_typed<float>(params, workspace, stream);
    case ScanDtype::kBFloat16:
      return launch_scan_forward_typed<__nv_bfloat16>(params, workspace, stream);
    case ScanDtype::kFloat16: return launch_scan_forward_typed<__half>(params, workspace, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t launch_scan_backward(const ScanBackwardParams& params, void* workspace,
                                 cudaStream_t stream) {
  switch (params.shape.dtype) {
    case ScanDtype::kFloat32: return launch_scan_backward_typed<float>(params, workspace, stream);
    case ScanDtype::kBFloat16:
      return launch_scan_backward_typed<__nv_bfloat16>(params, workspace, stream);
    case ScanDtype::kFloat16: return launch_scan_backward_typed<__half>(params, workspace, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t scan_resident_blocks(const ScanShape& shape, bool backward, int& blocks) {
  switch (shape.dtype) {
    case ScanDtype::kFloat32: return scan_resident_blocks_typed<float>(shape, backward, blocks);
    case ScanDtype::kBFloat16:
      return scan_resident_blocks_typed<__nv_bfloat16>(shape, backward, blocks);
    case ScanDtype::kFloat16: return scan_resident_blocks_typed<__half>(shape, backward, blocks);
  }
  return cudaErrorInvalidValue;
}

}  // namespace flashrnn::scan_kernels

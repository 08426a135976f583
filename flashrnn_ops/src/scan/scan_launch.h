// Launchers of the scan kernels. No torch here: the caller passes a workspace of
// scan_workspace_bytes(shape) bytes on the device (any contents) and the
// stream, and checks the returned error. Nothing synchronises the host.
#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include "scan_params.h"

namespace flashrnn::scan_kernels {

// Scratch memory the look-back needs for this shape (0 when each chain is one tile).
size_t scan_workspace_bytes(const ScanShape& shape);

cudaError_t launch_scan_forward(const ScanForwardParams& params, void* workspace,
                                cudaStream_t stream);
cudaError_t launch_scan_backward(const ScanBackwardParams& params, void* workspace,
                                 cudaStream_t stream);

// Per storage type, instantiated in scan_kernels_<dtype>.cu.
template <class T>
cudaError_t launch_scan_forward_typed(const ScanForwardParams& params, void* workspace,
                                      cudaStream_t stream);
template <class T>
cudaError_t launch_scan_backward_typed(const ScanBackwardParams& params, void* workspace,
                                       cudaStream_t stream);

}  // namespace flashrnn::scan_kernels

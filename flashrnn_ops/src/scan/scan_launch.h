// Launchers of the scan kernels. No torch here: the caller passes a workspace of
// scan_workspace_bytes(shape) bytes on the device (any contents) and the
// stream, and checks the returned error. Nothing synchronises the host.
#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include "scan/scan_params.h"
#include "scan/warp/scan_bdt_plan.h"

namespace flashrnn::scan_kernels {

// Scratch memory the look-back needs for this shape (0 when each chain is one tile).
size_t scan_workspace_bytes(const ScanShape& shape);

cudaError_t launch_scan_forward(const ScanForwardParams& params, void* workspace,
                                cudaStream_t stream);
cudaError_t launch_scan_backward(const ScanBackwardParams& params, void* workspace,
                                 cudaStream_t stream);

// Blocks the forward or backward kernel for this shape keeps resident on the
// current device, the size of its persistent grid (for benchmarks' reports).
cudaError_t scan_resident_blocks(const ScanShape& shape, bool backward, int& blocks);

// The compile-time tile knobs the kernels were built with (scan_tiling.h).
struct ScanKernelKnobs {
  int warps_per_tile;
  int bdt_steps_per_thread;
  int btd_steps_per_thread;
};
ScanKernelKnobs scan_kernel_knobs();

// Whether [B, D, T] runs on the warp kernels (scan_bdt_*) for this shape on the
// current device under the variant in force (scan_variant.h), and their plan.
bool scan_bdt_warp_plan(const ScanShape& shape, BdtPlan& plan);

// Per storage type, instantiated in scan_kernels_<dtype>.cu.
template <class T>
cudaError_t launch_scan_forward_typed(const ScanForwardParams& params, void* workspace,
                                      cudaStream_t stream);
template <class T>
cudaError_t launch_scan_backward_typed(const ScanBackwardParams& params, void* workspace,
                                       cudaStream_t stream);
template <class T>
cudaError_t scan_resident_blocks_typed(const ScanShape& shape, bool backward, int& blocks);

}  // namespace flashrnn::scan_kernels

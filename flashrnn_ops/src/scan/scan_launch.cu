// The storage-type switch in front of the typed launchers.
#include "scan/scan_launch.h"

#include <atomic>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "scan/scan_variant.h"
#include "scan/tile/scan_tiling.h"

namespace flashrnn::scan_kernels {

ScanKernelKnobs scan_kernel_knobs() {
  return {kWarpsPerTile, thread_shape(false).steps, thread_shape(true).steps};
}

namespace {

// Multiprocessors of the current device (cached per device; 0 on error).
int current_device_sms() {
  constexpr int kMaxDevices = 64;
  static std::atomic<int> cache[kMaxDevices] = {};
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 0;
  int sms = device < kMaxDevices ? cache[device].load(std::memory_order_relaxed) : 0;
  if (sms > 0) return sms;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) return 0;
  if (device < kMaxDevices) cache[device].store(sms, std::memory_order_relaxed);
  return sms;
}

}  // namespace

bool scan_bdt_warp_plan(const ScanShape& shape, BdtPlan& plan) {
  const ScanVariant variant = scan_variant();
  if (shape.btd || !variant.bdt_warp) return false;
  // Shorter rows would idle most lanes: the tile kernels put several in a warp.
  if (shape.steps < 32 * (16 / element_bytes(shape.dtype))) return false;
  plan = make_bdt_plan(shape, variant.bdt, current_device_sms());
  return true;
}

size_t scan_workspace_bytes(const ScanShape& shape) {
  BdtPlan plan;
  if (scan_bdt_warp_plan(shape, plan)) return bdt_lookback_layout(plan).total_bytes;
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

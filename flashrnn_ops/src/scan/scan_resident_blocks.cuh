// How many blocks of a persistent scan kernel fit on the current device.
#pragma once

#include <atomic>

#include <cuda_runtime_api.h>

namespace flashrnn::scan_kernels {

// Blocks of kKernel (kThreads threads each) resident on the current device at
// once with `shared_bytes` of dynamic shared memory: the persistent grid. The
// first call per device also lets the kernel use that much shared memory (and,
// with kMaxSharedCarveout, asks for the largest shared-memory carveout); later
// calls hit a per-device cache.
template <auto kKernel, int kThreads, bool kMaxSharedCarveout>
cudaError_t resident_blocks_of(int shared_bytes, int& blocks) {
  constexpr int kMaxDevices = 64;
  static std::atomic<int> cache[kMaxDevices] = {};
  int device = 0;
  if (const cudaError_t e = cudaGetDevice(&device)) return e;
  if (device < kMaxDevices && (blocks = cache[device].load(std::memory_order_relaxed)) > 0)
    return cudaSuccess;
  if (const cudaError_t e = cudaFuncSetAttribute(
          kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_bytes))
    return e;
  if constexpr (kMaxSharedCarveout) {
    if (const cudaError_t e = cudaFuncSetAttribute(
            kKernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared))
      return e;
  }
  int sms = 0, per_sm = 0;
  if (const cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device))
    return e;
  if (const cudaError_t e =
          cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kKernel, kThreads, shared_bytes))
    return e;
  blocks = sms * (per_sm > 0 ? per_sm : 1);
  if (device < kMaxDevices) cache[device].store(blocks, std::memory_order_relaxed);
  return cudaSuccess;
}

}  // namespace flashrnn::scan_kernels

// Flags in global memory that CTAs of one grid hand each other, once for
// every kernel and probe of the library: a release store (or add) publishes
// everything the CTA wrote before it, at GPU scope, and an acquire load that
// sees it makes those writes visible to the reader. The scan's look-back
// (scan/tile/scan_block.cuh) and the grid-wide step probe
// (experiments/flashbench/grid_step_probe.cu) use them.
#pragma once

#include <cstdint>

namespace flashrnn::gpu_flags {

__device__ __forceinline__ uint32_t load_acquire(const uint32_t* flag) {
  uint32_t value;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(value) : "l"(flag) : "memory");
  return value;
}

__device__ __forceinline__ void store_release(uint32_t* flag, uint32_t value) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(flag), "r"(value) : "memory");
}

__device__ __forceinline__ void add_release(uint32_t* counter, uint32_t value) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(counter), "r"(value) : "memory");
}

}  // namespace flashrnn::gpu_flags

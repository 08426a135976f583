// The few PTX instructions the tensor-core fused kernels are built from
// (sm_80 and later): the m16n8k16 MMA with fp32 accumulators, ldmatrix and
// named barriers (their cp.async copies: async_copy.cuh, shared with the scan).
// Fragment layouts are PTX's:
//   A 16×16 (row): a0a1 (row l/4, k 2(l%4)), a2a3 (row +8), a4a5 (k +8), a6a7 (both)
//   B 16×8  (col): b0b1 (k 2(l%4), col l/4), b2b3 (k +8)
//   C 16×8       : c0c1 (row l/4, col 2(l%4)), c2c3 (row +8)
// where l is the lane.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace flashrnn::fused::mma {

// Two 16-bit values in one register, `lo` at the lower address.
template <class S> __device__ __forceinline__ uint32_t pack(float lo, float hi);
template <> __device__ __forceinline__ uint32_t pack<__nv_bfloat16>(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}
template <> __device__ __forceinline__ uint32_t pack<__half>(float lo, float hi) {
  const __half2 v = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

template <class S> __device__ __forceinline__ float2 unpack(uint32_t v);
template <> __device__ __forceinline__ float2 unpack<__nv_bfloat16>(uint32_t v) {
  return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&v));
}
template <> __device__ __forceinline__ float2 unpack<__half>(uint32_t v) {
  return __half22float2(*reinterpret_cast<const __half2*>(&v));
}

// c += a · b on one 16×8×16 tile.
template <class S>
__device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4],
                                          const uint32_t (&b)[2]);
template <>
__device__ __forceinline__ void mma_16816<__nv_bfloat16>(float (&c)[4], const uint32_t (&a)[4],
                                                         const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
template <>
__device__ __forceinline__ void mma_16816<__half>(float (&c)[4], const uint32_t (&a)[4],
                                                  const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Shared-memory address `address` of this CTA as seen in CTA `rank` of its
// cluster (sm_90: distributed shared memory).
__device__ __forceinline__ uint32_t cluster_address(uint32_t address, int rank) {
  uint32_t mapped = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(mapped) : "r"(address), "r"(rank));
#endif
  return mapped;
}

// The A fragment of a 16×16 tile of a row-major 16-bit matrix in shared memory
// whose rows are `row_stride` elements apart, tile origin `tile`.
template <class S>
__device__ __forceinline__ void load_a_fragment(uint32_t (&a)[4], const S* tile, int row_stride) {
  const int lane = threadIdx.x % 32, matrix = lane / 8;
  const S* row = tile + (lane % 8 + 8 * (matrix % 2)) * row_stride + 8 * (matrix / 2);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
               : "r"(shared_address(row)));
}

// Barrier `id` (1…15; 0 is __syncthreads') of `threads` threads, whole warps.
__device__ __forceinline__ void sync_warps(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

}  // namespace flashrnn::fused::mma

// How the CTAs that share one head (tc_tiling.h) hand each other a step's
// result: every CTA writes its slice of a shared tile (h_t in the forward,
// δ(R h) in the backward) into its own copy of the tile and into every other
// CTA's, through distributed shared memory, then the cluster meets at one
// barrier whose release/acquire makes the writes visible. With one CTA per
// head the same calls are plain shared stores and __syncthreads.
//
// Rules the kernels keep: no CTA writes into another before the cluster's
// first barrier (both CTAs must be running), and none after the last barrier
// that the receiving CTA passes (it may have exited).
#pragma once

#include <cstdint>

#include "fused/mma.cuh"

namespace flashrnn::fused {

template <int kCluster>
class ClusterExchange {
 public:
  // `smem` is the start of the CTA's dynamic shared memory: the tiles' offsets
  // from it are the same in every CTA of the cluster.
  __device__ explicit ClusterExchange(const void* smem) : base_(mma::shared_address(smem)) {
    if constexpr (kCluster > 1)
#pragma unroll
      for (int q = 0; q < kCluster; ++q) peer_[q] = map_to_rank(base_, q);
  }

  // Writes 32 bits at `local` (in this CTA's shared memory) and at the same
  // offset in every other CTA of the cluster.
  __device__ void store(void* local, uint32_t value) const {
    if constexpr (kCluster == 1) {
      *reinterpret_cast<uint32_t*>(local) = value;
    } else {
      const uint32_t offset = mma::shared_address(local) - base_;
#pragma unroll
      for (int q = 0; q < kCluster; ++q) store_remote(peer_[q] + offset, value);
    }
  }

  // Every thread of every CTA of the cluster arrives; afterwards all their
  // earlier shared-memory writes (local and remote) are visible.
  __device__ static void barrier() {
    if constexpr (kCluster == 1) {
      __syncthreads();
    } else {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
      asm volatile(
          "barrier.cluster.arrive.release.aligned;\n"
          "barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#else
      __trap();  // clusters need sm_90: the tuner never launches these there
#endif
    }
  }

 private:
  // The address of shared-memory address `address` of this CTA in CTA `rank` of the cluster.
  __device__ static uint32_t map_to_rank(uint32_t address, int rank) {
    uint32_t mapped = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(mapped) : "r"(address), "r"(rank));
#else
    __trap();
#endif
    return mapped;
  }
  __device__ static void store_remote(uint32_t cluster_address, uint32_t value) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("st.shared::cluster.u32 [%0], %1;\n" ::"r"(cluster_address), "r"(value) : "memory");
#else
    __trap();
#endif
  }

  uint32_t base_;
  uint32_t peer_[kCluster > 1 ? kCluster : 1] = {};
};

}  // namespace flashrnn::fused

// How the CTAs that share one head (tc_tiling.h) hand each other a step's
// result, held in two shared tiles used in turn: h_t in the forward (every CTA
// needs all of it), in the backward the partial sums of δh each CTA owes the
// others. With one CTA per head (kCluster == 1) a thread stores its elements
// into the tile and the step's __syncthreads publishes them.
//
// In a cluster every CTA keeps its own copy of both tiles; a thread writes
// each of its elements into every CTA's copy (store) or into the one CTA the
// element is for (store_to) with st.async, which also counts the bytes on
// that CTA's mbarrier of the tile. A tile is complete, in a CTA, when its
// mbarrier has counted the bytes the CTA receives per filling and one thread
// of the CTA has announced them (expect()); wait() blocks until then.
// No cluster-wide barrier and no memory fence sit on a step's path: a CTA
// writes step t's tile (the one step t-2 wrote) only after waiting for step
// t-1's tile, which every CTA wrote after its step t-1 had read step t-2's
// tile, so a tile is never overwritten while someone reads it.
//
// Rules the kernels keep: start() before the first store (every CTA's
// mbarriers are initialised, every CTA runs), and no store into a CTA after
// the last tile that CTA waits for (it may have exited).
#pragma once

#include <cstdint>

#include "fused/mbarrier.cuh"
#include "fused/mma.cuh"

namespace flashrnn::fused {

template <int kCluster>
class ClusterExchange {
 public:
  // `smem`: the start of the CTA's dynamic shared memory (the tiles' offsets
  // from it are the same in every CTA); `barriers`: two mbarriers in shared
  // memory, one per tile; `tile_bytes`: the bytes a CTA receives per filling
  // of a tile.
  __device__ ClusterExchange(const void* smem, uint64_t* barriers, uint32_t tile_bytes)
      : base_(mma::shared_address(smem)), barriers_(mma::shared_address(barriers)), tile_bytes_(tile_bytes) {
    if constexpr (kCluster > 1)
#pragma unroll
      for (int q = 0; q < kCluster; ++q) peer_[q] = mma::cluster_address(base_, q);
  }

  // Once, by every thread, before any store: initialises the mbarriers and
  // waits until every CTA of the cluster has.
  __device__ void start() const {
    if constexpr (kCluster > 1) mbarrier::init_in_cluster(barriers_, 2, [](int) { return 1u; });
  }

  // By every thread of the CTA, in the step that writes `tile` (before or
  // after the stores): the CTA expects one more filling of it.
  __device__ void expect(int tile) const {
    if constexpr (kCluster > 1) {
      if (threadIdx.x == 0) mbarrier::arrive_expect_bytes(barriers_ + 8 * tile, tile_bytes_);
    }
  }

  // Writes 32 bits at `local` (an element of tile `tile` in this CTA's shared
  // memory) and at the same offset in every other CTA of the cluster.
  __device__ void store(int tile, void* local, uint32_t value) const {
    if constexpr (kCluster == 1) {
      *reinterpret_cast<uint32_t*>(local) = value;
    } else {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
      const uint32_t offset = mma::shared_address(local) - base_;
      const uint32_t barrier_offset = barriers_ + 8 * tile - base_;
#pragma unroll
      for (int q = 0; q < kCluster; ++q)
        asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];\n" ::"r"(
                         peer_[q] + offset),
                     "r"(value), "r"(peer_[q] + barrier_offset) : "memory");
#endif
    }
  }

  // Writes two floats at `local` (an element of tile `tile`, 8-byte aligned)
  // in CTA `rank` of the cluster only: the backward's partial sums, each
  // owed to one CTA (tc_backward.cuh).
  __device__ void store_to(int rank, int tile, void* local, float2 value) const {
    if constexpr (kCluster > 1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
      const uint32_t offset = mma::shared_address(local) - base_;
      const uint32_t barrier_offset = barriers_ + 8 * tile - base_;
      asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%0], {%1, %2}, [%3];\n" ::"r"(
                       peer_[rank] + offset),
                   "f"(value.x), "f"(value.y), "r"(peer_[rank] + barrier_offset) : "memory");
#endif
    }
  }

  // Until the `filling`-th filling (0, 1, ...) of `tile` is complete in this
  // CTA. With one CTA per head nothing: the kernel's __syncthreads does it.
  __device__ void wait(int tile, uint32_t filling) const {
    if constexpr (kCluster > 1) mbarrier::wait_cluster(barriers_ + 8 * tile, filling & 1);
  }

 private:
  uint32_t base_, barriers_, tile_bytes_;
  uint32_t peer_[kCluster > 1 ? kCluster : 1] = {};
};

}  // namespace flashrnn::fused

// How the CTAs of a wide head's cluster hand each other h_t in the forward
// (TcForward::kSliceExchange, tc_tiling.h; tc_forward.cuh): by slice. Each CTA
// keeps two h tiles laid out by source CTA, [source][16 rows][Dc + 8], and
// writes its own slice of h_t into its own tile with plain stores; once all
// of its threads have (publish: a barrier of the CTA), one thread per peer
// copies the slice into that peer's tile with one bulk copy
// (cp.async.bulk shared::cluster), which counts its bytes on the peer's
// mbarrier of (tile, source). A reader waits for each source's slice just
// before it multiplies it, so a step's MMA starts on the slices that are in
// while the others are on their way. In the step's skeleton at 1x768
// (experiments/flashbench/step_floor_probe.cu) the exchange alone takes 1.14
// us a step this way against 1.51 with every thread's st.async to every CTA,
// and the whole step 2.65 against 3.33.
//
// No cluster-wide barrier sits on a step's path, as in ClusterExchange: a CTA
// copies into a peer's tile t & 1 (step t) only after it has multiplied all
// of step t-1's tile, for which the peer published h_{t-1} after all of its
// threads had read tile t & 1 (step t-1's MMA). Its own slice of tile t & 1,
// which its copies of step t read, it writes again at step t+2, after the
// others' h_{t+1}, which each sent after its copy of step t had arrived.
//
// Rules the kernels keep: start() before the first publish, and the last
// tile waited for (wait_all) before a CTA exits: no copy reaches an exited CTA.
#pragma once

#include <cstdint>

#include "fused/mbarrier.cuh"
#include "fused/mma.cuh"

namespace flashrnn::fused {

template <int kCluster>
class SliceExchange {
 public:
  // `barriers`: 2 * kCluster mbarriers in shared memory, [tile][source] (at
  // the same offset in every CTA, as the tiles are); `slice_bytes`: one
  // slice, a multiple of 16.
  __device__ SliceExchange(uint64_t* barriers, uint32_t slice_bytes)
      : barriers_(mma::shared_address(barriers)), slice_bytes_(slice_bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank_));
#endif
  }

  // Once, by every thread, before any publish: initialises the mbarriers and
  // waits until every CTA of the cluster has.
  __device__ void start() const { mbarrier::init_in_cluster(barriers_, 2 * kCluster, [](int) { return 1u; }); }

  // By all `threads` threads of the CTA once each has stored its elements of
  // `slice` (this CTA's slice of tile `tile`): sends the slice to every peer
  // and counts the one that will come from each into this CTA's `tile`.
  __device__ void publish(int tile, const void* slice, int threads) const {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // the copies read it in the async proxy
    mma::sync_warps(kBarrierId, threads);
    const int q = threadIdx.x;  // the peer this thread serves
    if (q >= kCluster) return;
    if (q == int(rank_)) {
      mbarrier::arrive(barrier(tile, q));  // its own slice is in: the barrier's stores
      return;
    }
    mbarrier::arrive_expect_bytes(barrier(tile, q), slice_bytes_);  // q's slice, to come
    const uint32_t from = mma::shared_address(slice);
    asm volatile(
        "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
            mma::cluster_address(from, q)),
        "r"(from), "r"(slice_bytes_), "r"(mma::cluster_address(barrier(tile, int(rank_)), q)) : "memory");
#endif
  }

  // Until the `filling`-th filling (0, 1, ...) of `tile` has source's slice.
  __device__ void wait(int tile, int source, uint32_t filling) const {
    mbarrier::wait_cluster(barrier(tile, source), filling & 1);
  }
  __device__ void wait_all(int tile, uint32_t filling) const {
    for (int q = 0; q < kCluster; ++q) wait(tile, q, filling);
  }

 private:
  static constexpr int kBarrierId = 15;  // of the CTA's 16 (tc_forward.cuh's pairs take 1 …)

  __device__ uint32_t barrier(int tile, int source) const { return barriers_ + 8 * (tile * kCluster + source); }

  uint32_t barriers_, slice_bytes_, rank_ = 0;
};

}  // namespace flashrnn::fused

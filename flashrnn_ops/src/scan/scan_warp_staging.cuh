// A lookback warp's copies of its items into shared memory (cp.async): the
// item's inputs wait there, not in registers, until the warp knows the state
// entering the item, and with two stages the next item's loads are in flight
// while the warp waits on the look-back of the current one. Lane l copies and later
// reads back only its own 16-byte slots (slot k·32 + l: a warp-wide copy is 512
// contiguous bytes of global memory, a warp-wide read is conflict-free), so
// only the lane's own cp.async.wait is needed, never a barrier.
#pragma once

#include <cstdint>

#include "scan_lane_io.cuh"
#include "scan_staging.cuh"  // copy_async, commit_copies, wait_copies

namespace flashrnn::scan_kernels {

// Stages a lookback kernel keeps per warp: two (the next item copied while the
// current one waits) up to 8 iterations per item; one for longer items, whose
// single stage already takes 16-24 KB per warp.
constexpr int lookback_stages(int iterations) { return iterations >= 16 ? 1 : 2; }

// Shared memory of one block of lookback warps: kStages stages × kIters
// iterations × kTensors tensors × 32 lanes × 16 bytes per warp.
template <int kIters, int kTensors, int kStages = lookback_stages(kIters)>
constexpr int warp_staging_bytes(int warps) {
  return warps * kStages * kIters * kTensors * 32 * 16;
}

template <int kIters, int kTensors, int kStages = lookback_stages(kIters)>
struct WarpStaging {
  uint4* base;  // this warp's part of the block's dynamic shared memory
  int lane;

  __device__ static WarpStaging of_warp(unsigned char* block_shared, int warp, int lane) {
    return {reinterpret_cast<uint4*>(block_shared) + warp * kStages * kIters * kTensors * 32, lane};
  }
  __device__ uint4* slot(int stage, int k, int tensor) const {
    return base + ((stage * kIters + k) * kTensors + tensor) * 32 + lane;
  }
  // Issues the copy of the lane's vector of tensor p at scan step u (the caller
  // commits); vectors past the row's end are not copied.
  template <bool kDescending, class T>
  __device__ void copy(int stage, int k, int tensor, const T* p, const RowView& r,
                       int64_t u) const {
    constexpr int V = kLaneVector<T>;
    if (u < r.steps)
      copy_async<16>(slot(stage, k, tensor), p + r.base + (kDescending ? r.steps - u - V : u));
  }
  // The copied vector (after wait_copies), or `fill` past the row's end.
  template <class T>
  __device__ LaneWords read(int stage, int k, int tensor, const RowView& r, int64_t u,
                            T fill) const {
    if (u >= r.steps) return splat(fill);
    const uint4 v = *slot(stage, k, tensor);
    return LaneWords{{v.x, v.y, v.z, v.w}};
  }
};

}  // namespace flashrnn::scan_kernels

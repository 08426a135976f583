// A lookback warp's item in shared memory. The item is copied in with
// coalesced accesses — iteration k of a tensor is lane l's 16-byte vector at
// slot 32·k + l, so one warp-wide copy is 512 contiguous bytes — and read back
// transposed: lane l takes the kIters consecutive slots l·kIters … l·kIters +
// kIters − 1, a contiguous run of kIters·V scan steps, and composes them
// serially in registers. The warp then needs one shuffle scan per item, not
// one per iteration, which is what made long items compute-bound.
//
// Slot s holds scan steps [s·V, s·V + V) of the item, its words in memory order
// (lane_step reads them in scan order). It sits at physical slot
// item_slot_swizzle(s) = s ^ ((s / kIters) mod 8): for the copies (s = 32k + l)
// s / kIters is the same for the 8 lanes of a quarter-warp, for the transposed
// reads (s = l·kIters + m) it is l, so both put the 8 lanes of a quarter-warp
// in 8 different 16-byte bank groups: no bank conflicts either way (checked on
// the CPU in test_scan_bdt_plan.cpp).
#pragma once

#include <cstdint>

#include "async_copy.cuh"
#include "scan/warp/scan_bdt_plan.h"  // item_slot_swizzle
#include "scan/warp/scan_lane_io.cuh"

namespace flashrnn::scan_kernels {

// Shared memory of one block of lookback warps: kTensors tensors × kIters·32
// slots of 16 bytes per warp.
template <int kIters, int kTensors>
constexpr int item_staging_bytes(int warps) {
  return warps * kTensors * kIters * 32 * 16;
}

template <int kIters, int kTensors>
struct ItemStaging {
  static_assert(kIters % 8 == 0, "the swizzle needs runs of at least 8 slots per lane");
  static constexpr int kSlots = kIters * 32;
  uint4* base;  // this warp's part of the block's dynamic shared memory
  int lane;

  __device__ static ItemStaging of_warp(unsigned char* block_shared, int warp, int lane) {
    return {reinterpret_cast<uint4*>(block_shared) + warp * kTensors * kSlots, lane};
  }
  __device__ uint4* at(int tensor, int s) const {
    return base + tensor * kSlots + item_slot_swizzle(s, kIters);
  }
  // Copies this lane's vector of iteration k of tensor p (slot 32·k + lane),
  // scan steps u … u + V − 1, u = first + (32·k + lane)·V. The vector path
  // copies asynchronously (the caller commits) and skips vectors past the
  // row's end; the scalar path loads (fill outside the row) and stores.
  template <bool kDescending, class T>
  __device__ void copy(int tensor, int k, const T* p, const RowView& r, int64_t u, T fill) const {
    constexpr int V = kLaneVector<T>;
    uint4* slot = at(tensor, 32 * k + lane);
    if (r.vectors) {
      if (u < r.steps) async_copy::copy<16>(slot, p + r.base + (kDescending ? r.steps - u - V : u));
    } else {
      const LaneWords w = load_lane<kDescending, T>(p, r, u, fill);
      *slot = make_uint4(w.w[0], w.w[1], w.w[2], w.w[3]);
    }
  }
  // Slot s as words, or `fill` when its steps (from scan step u) are past the row's end.
  template <class T>
  __device__ LaneWords read(int tensor, int s, const RowView& r, int64_t u, T fill) const {
    if (u >= r.steps) return splat(fill);
    const uint4 v = *at(tensor, s);
    return LaneWords{{v.x, v.y, v.z, v.w}};
  }
  __device__ void write(int tensor, int s, const LaneWords& w) const {
    *at(tensor, s) = make_uint4(w.w[0], w.w[1], w.w[2], w.w[3]);
  }
};

}  // namespace flashrnn::scan_kernels

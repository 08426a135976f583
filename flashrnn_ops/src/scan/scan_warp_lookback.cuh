// Decoupled look-back between the items of a row (Merrill & Garland 2016), one
// warp per item (scan_bdt_plan.h). An item publishes its total map, then reads
// its predecessors' status words 32 at a time (one per lane) until one has
// published the state leaving it; it composes the maps in between with a warp
// reduction, and publishes the state leaving itself. Lane 0 writes everything
// an item publishes, value first and status word last with release semantics,
// so a reader that acquires the status word sees the value: no fences.
//
// Items are claimed from a ticket counter in row-fastest order, so every item a
// warp waits on has been claimed by a running warp: no deadlock.
#pragma once

#include <cstdint>

#include "scan_block.cuh"  // load_acquire, store_release, status values
#include "scan_math.cuh"
#include "scan_warp_scan.cuh"

namespace flashrnn::scan_kernels {

// Pointers into the look-back workspace (bdt_lookback_layout).
struct WarpLookback {
  uint32_t* ticket = nullptr;
  uint32_t* flags = nullptr;      // [items]
  float2* aggregates = nullptr;   // [items] the item's map (a, b)
  float* inclusive = nullptr;     // [items] the state leaving the item
};

// Lane 0 takes the next ticket; the value is read with claimed_item() later, so
// the atomic's latency overlaps the warp's work.
__device__ __forceinline__ unsigned claim_ticket(const WarpLookback& lb, int lane) {
  return lane == 0 ? atomicAdd(lb.ticket, 1u) : 0u;
}
__device__ __forceinline__ int64_t claimed_item(unsigned ticket) {
  return int64_t(__shfl_sync(kFullWarp, ticket, 0));
}

// The state entering `item`, in every lane; every lane of the warp calls it.
// `chunk` is the item's position in its row (its predecessor is `stride` items
// before it), `total` its own map, `chain_start` the state before the row.
__device__ __forceinline__ float warp_carry_in(const WarpLookback& lb, int64_t item,
                                               int64_t chunk, int64_t stride, bool has_successor,
                                               Affine total, float chain_start, int lane) {
  float carry = chain_start;
  if (chunk > 0) {
    if (lane == 0) {
      lb.aggregates[item] = make_float2(total.a, total.b);
      store_release(lb.flags + item, kAggregateReady);
    }
    Affine later = identity_map();  // maps of the items consumed so far (newest first)
    int64_t newest = item - stride;
    int64_t remaining = chunk;  // predecessors not consumed yet
    for (;;) {
      const bool valid = lane < remaining;
      const int64_t p = newest - int64_t(lane) * stride;
      int count;
      int first_inclusive;
      for (;;) {
        const uint32_t status = valid ? load_acquire(lb.flags + p) : kPending;
        const unsigned pending = __ballot_sync(kFullWarp, status == kPending);
        const unsigned ready = __ballot_sync(kFullWarp, status == kInclusiveReady);
        const int first_pending = pending ? __ffs(pending) - 1 : 32;
        first_inclusive = ready ? __ffs(ready) - 1 : 32;
        count = first_inclusive < first_pending ? first_inclusive + 1 : first_pending;
        if (count > 0) break;
        __nanosleep(64);
      }
      const bool found = first_inclusive < count;
      const int aggregates = found ? count - 1 : count;
      Affine map = identity_map();
      if (lane < aggregates) {
        const float2 m = __ldcg(lb.aggregates + p);
        map = Affine{m.x, m.y};
      }
      const Affine window = warp_compose_older_above(map, lane);
      later = then(Affine{__shfl_sync(kFullWarp, window.a, 0), __shfl_sync(kFullWarp, window.b, 0)},
                   later);
      if (found) {
        const float state = lane == first_inclusive ? __ldcg(lb.inclusive + p) : 0.f;
        carry = apply(later, __shfl_sync(kFullWarp, state, first_inclusive));
        break;
      }
      newest -= int64_t(count) * stride;
      remaining -= count;
    }
  }
  if (has_successor && lane == 0) {
    lb.inclusive[item] = apply(total, carry);
    store_release(lb.flags + item, kInclusiveReady);
  }
  return carry;
}

}  // namespace flashrnn::scan_kernels

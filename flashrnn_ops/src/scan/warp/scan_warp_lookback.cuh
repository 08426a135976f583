// Decoupled look-back between the items of a row (Merrill & Garland 2016), one
// block per item, warp 0 doing the look-back (scan_bdt_plan.h).
//
// Each item has one 16-byte descriptor {status, a, b, state}: its total map
// (a, b) and, once known, the state leaving it. Lane 0 writes a descriptor with
// one 16-byte store and readers read it with one 16-byte load, so status and
// values always arrive together: no fences (CUB's tile descriptors do the
// same). An item publishes its map, then reads its predecessors' descriptors
// kLookbackPerLane per lane — a window of 128 predecessors per round trip to
// L2 — until one has published its state, composes the maps in between with a
// warp reduction, and publishes its own state. With few rows and many items
// in flight per row, the window's width is what keeps the look-back from
// limiting the throughput.
//
// Items are claimed from a ticket counter in row-fastest order, so every item a
// block waits on has been claimed by a running block: no deadlock.
#pragma once

#include <cstdint>

#include "scan/scan_math.cuh"
#include "scan/warp/scan_warp_scan.cuh"

namespace flashrnn::scan_kernels {

// Descriptor status (0 is what the workspace is cleared to).
enum : uint32_t { kItemPending = 0, kItemAggregate = 1, kItemInclusive = 2 };

constexpr int kLookbackPerLane = 4;

// Pointers into the look-back workspace (bdt_lookback_layout).
struct WarpLookback {
  uint32_t* ticket = nullptr;
  uint4* descriptors = nullptr;  // [rows][chunks] {status, a, b, state}
};

// Relaxed, gpu-scope accesses (not weak ones): the look-back re-reads a
// descriptor in a spin loop with no fence in it, and a weak load there may be
// hoisted out of the loop by ptxas (CUB puts a __threadfence_block() in its
// spin loop for the same reason) — a suspected cause of the look-back hang in
// the v4 H200 run. Status and values still travel in one 16-byte access.
__device__ __forceinline__ uint4 load_descriptor(const uint4* p) {
  uint4 v;
  asm volatile("ld.relaxed.gpu.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p)
               : "memory");
  return v;
}

__device__ __forceinline__ void store_descriptor(uint4* p, uint32_t status, Affine map,
                                                 float state) {
  asm volatile("st.relaxed.gpu.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(status),
               "r"(__float_as_uint(map.a)), "r"(__float_as_uint(map.b)),
               "r"(__float_as_uint(state))
               : "memory");
}

// The state entering the item at position `chunk` of row `row`, in every lane;
// every lane of the warp calls it. `total` is the item's own map, `chain_start`
// the state before the row. Descriptors are kept row by row ([row][chunk], not
// in ticket order), so a window of predecessors is 2 KB of contiguous memory.
__device__ __forceinline__ float warp_carry_in(const WarpLookback& lb, int64_t row, int64_t chunks,
                                               int64_t chunk, bool has_successor, Affine total,
                                               float chain_start, int lane) {
  uint4* const row_descriptors = lb.descriptors + row * chunks;
  constexpr int E = kLookbackPerLane;
  constexpr unsigned kNone = 0xffffffffu;
  float carry = chain_start;
  if (chunk > 0) {
    if (lane == 0) store_descriptor(row_descriptors + chunk, kItemAggregate, total, 0.f);
    Affine later = identity_map();  // maps of the items consumed so far
    int64_t newest = chunk - 1;      // window entry e is chunk newest − e
    int64_t remaining = chunk;       // predecessors not consumed yet
    for (;;) {
      // Until the nearest predecessor not consumed yet has published anything,
      // the window is useless: poll that one descriptor (lane 0, 16 bytes), not
      // the whole window (2 KB per warp per poll, which, from hundreds of
      // waiting warps, loads the L2 that the data streams through).
      for (;;) {
        const uint32_t status = lane == 0 ? load_descriptor(row_descriptors + newest).x : 0u;
        if (__shfl_sync(kFullWarp, status, 0) != kItemPending) break;
        __nanosleep(64);
      }
      uint4 d[E];
      unsigned first_pending, first_inclusive;
      for (;;) {
        unsigned my_pending = kNone, my_inclusive = kNone;
#pragma unroll
        for (int q = 0; q < E; ++q) {
          const int e = lane * E + q;
          d[q] = e < remaining ? load_descriptor(row_descriptors + (newest - e))
                               : make_uint4(kItemPending, 0u, 0u, 0u);
        }
#pragma unroll
        for (int q = E - 1; q >= 0; --q) {
          if (d[q].x == kItemPending) my_pending = unsigned(lane * E + q);
          if (d[q].x == kItemInclusive) my_inclusive = unsigned(lane * E + q);
        }
        // No pending entry at all (a full window of aggregates) means all
        // 32·E entries are usable. Before this cap, first_pending stayed kNone
        // there, `count` became 2^32 − 1, `remaining` went negative and the
        // next round spun forever on an all-pending window: the hang of the
        // v4 H200 run (rows with more than 32·E aggregates in flight before
        // the nearest inclusive one, e.g. 16 rows × 2^20 steps).
        first_pending = min(__reduce_min_sync(kFullWarp, my_pending), unsigned(32 * E));
        first_inclusive = __reduce_min_sync(kFullWarp, my_inclusive);
        if (first_pending > 0 || first_inclusive == 0) break;
        __nanosleep(64);
      }
      // Entries before the first pending one are usable; the first inclusive
      // one among them ends the walk.
      const bool found = first_inclusive < first_pending;
      const unsigned count = found ? first_inclusive + 1 : first_pending;
      const unsigned aggregates = found ? count - 1 : count;
      Affine map = identity_map();  // this lane's entries, the oldest first
#pragma unroll
      for (int q = E - 1; q >= 0; --q)
        if (unsigned(lane * E + q) < aggregates)
          map = then(map, Affine{__uint_as_float(d[q].y), __uint_as_float(d[q].z)});
      const Affine window = warp_compose_older_above(map, lane);
      later = then(Affine{__shfl_sync(kFullWarp, window.a, 0), __shfl_sync(kFullWarp, window.b, 0)},
                   later);
      if (found) {
        float state = 0.f;
#pragma unroll
        for (int q = 0; q < E; ++q)
          if (unsigned(lane * E + q) == first_inclusive) state = __uint_as_float(d[q].w);
        carry = apply(later, __shfl_sync(kFullWarp, state, int(first_inclusive / E)));
        break;
      }
      newest -= int64_t(count);
      remaining -= count;
    }
  }
  if (has_successor && lane == 0)
    store_descriptor(row_descriptors + chunk, kItemInclusive, total, apply(total, carry));
  return carry;
}

// A lookback block's shared state for its current item: the ticket, then each
// warp's part total, then the state entering each part.
template <int kWarps>
struct LookbackBlock {
  unsigned ticket;
  Affine part_total[kWarps];
  float part_carry[kWarps];
};

// The item's ticket, in every thread: thread 0 publishes `claim` (its atomic,
// issued earlier, so its round trip overlapped the previous item's work).
template <int kWarps>
__device__ __forceinline__ int64_t block_item(LookbackBlock<kWarps>& block, unsigned claim) {
  if (threadIdx.x == 0) block.ticket = claim;
  __syncthreads();
  return int64_t(block.ticket);
}

// The state entering the calling warp's part of the item; every thread of the
// block calls it with its warp's part total. The block composes the parts'
// totals, warp 0 runs the look-back for the whole item (warp_carry_in) and
// hands each part its entering state through shared memory.
template <int kWarps>
__device__ __forceinline__ float block_carry_in(const WarpLookback& lb,
                                                LookbackBlock<kWarps>& block, int64_t row,
                                                int64_t chunks, int64_t chunk, bool has_successor,
                                                Affine part_total, float chain_start, int warp,
                                                int lane) {
  if (lane == 0) block.part_total[warp] = part_total;
  __syncthreads();
  if (warp == 0) {
    Affine prefix[kWarps], total = identity_map();
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      prefix[w] = total;
      total = then(total, block.part_total[w]);
    }
    const float carry =
        warp_carry_in(lb, row, chunks, chunk, has_successor, total, chain_start, lane);
    if (lane == 0)
#pragma unroll
      for (int w = 0; w < kWarps; ++w) block.part_carry[w] = apply(prefix[w], carry);
  }
  __syncthreads();
  return block.part_carry[warp];
}

}  // namespace flashrnn::scan_kernels

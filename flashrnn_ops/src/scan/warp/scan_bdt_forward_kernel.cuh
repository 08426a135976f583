// The [B, D, T] forward kernels (scan_bdt_plan.h): x[u] = a[u]·x[u−1] + b[u]
// along each row, one warp per row (march) or per item of a row (lookback).
// Each reads a and b once and writes x once (and `last`): the floor's 3 tensors.
#pragma once

#include <cstdint>

#include "async_copy.cuh"
#include "scan/scan_math.cuh"
#include "scan/warp/scan_bdt_plan.h"
#include "scan/warp/scan_lane_io.cuh"
#include "scan/warp/scan_warp_lookback.cuh"
#include "scan/warp/scan_warp_scan.cuh"
#include "scan/warp/scan_warp_staging.cuh"

namespace flashrnn::scan_kernels {

template <class T>
struct BdtForwardArgs {
  BdtPlan plan;
  WarpLookback lookback;
  const T* a;
  const T* b;
  const T* x0;  // or null
  T* x;
  T* last;
};

// A lane's V steps composed into one map.
template <bool kDesc, class T>
__device__ __forceinline__ Affine lane_map(const LaneWords& a, const LaneWords& b) {
  constexpr int V = kLaneVector<T>;
  Affine m{lane_step<kDesc, T>(a, 0), lane_step<kDesc, T>(b, 0)};
#pragma unroll
  for (int j = 1; j < V; ++j) m = then(m, Affine{lane_step<kDesc, T>(a, j), lane_step<kDesc, T>(b, j)});
  return m;
}

// The lane's V states from the state entering them, packed (and `last`, when
// the row's final step is among them); returns the state leaving them.
template <bool kDesc, class T>
__device__ __forceinline__ float forward_lane_outputs(const BdtForwardArgs<T>& args,
                                                      const RowView& r, int64_t row, int64_t u,
                                                      const LaneWords& a, const LaneWords& b,
                                                      float state, LaneWords& x_words) {
  constexpr int V = kLaneVector<T>;
  const int final_step = final_step_in_lane(r, u, V);
  float x[V];
#pragma unroll
  for (int j = 0; j < V; ++j) {
    state = fmaf(lane_step<kDesc, T>(a, j), state, lane_step<kDesc, T>(b, j));
    x[j] = state;
    if (j == final_step) args.last[row] = from_float<T>(state);
  }
  x_words = pack_lane<kDesc, T>(x);
  return state;
}

// The lane's V states from the state entering them; stores them (and `last`).
template <bool kDesc, class T>
__device__ __forceinline__ void emit_forward(const BdtForwardArgs<T>& args, const RowView& r,
                                             int64_t row, int64_t u, const LaneWords& a,
                                             const LaneWords& b, float state) {
  LaneWords x;
  forward_lane_outputs<kDesc>(args, r, row, u, a, b, state, x);
  store_lane<kDesc>(args.x, r, u, x);
}

// kVectors: 16-byte accesses (T % V == 0, aligned tensors); a template
// parameter, so that the scalar path costs the vector kernels no registers.
template <bool kVectors, class T>
__device__ __forceinline__ RowView forward_row(const BdtForwardArgs<T>& args, int64_t row) {
  return RowView{row * args.plan.steps, args.plan.steps, kVectors};
}

// kDesc: the scan runs from t = T−1 down to 0 (reverse).
//
// march: warp w of the grid walks row w; the loads of the next kDepth
// iterations are in flight while it scans the current one. Depth 2 fits 64
// registers (32 warps per SM), depth 4 needs up to 80 (24 warps per SM).
template <class T, bool kDesc, bool kVectors, int kDepth>
__global__ void __launch_bounds__(kBdtThreadsPerBlock, kDepth >= 4 ? 3 : 4)
    scan_bdt_forward_march(const BdtForwardArgs<T> args) {
  constexpr int V = kLaneVector<T>;
  const int lane = threadIdx.x % 32;
  const int64_t row = int64_t(blockIdx.x) * kBdtWarpsPerBlock + threadIdx.x / 32;
  if (row >= args.plan.rows) return;  // the whole warp
  const RowView r = forward_row<kVectors>(args, row);
  const int64_t W = args.plan.iteration_steps;
  const int64_t iterations = (r.steps + W - 1) / W;
  const T one = from_float<T>(1.f), zero = from_float<T>(0.f);

  LaneWords ring_a[kDepth], ring_b[kDepth];
#pragma unroll
  for (int d = 0; d < kDepth; ++d) {
    const int64_t u = d * W + lane * V;
    ring_a[d] = load_lane<kDesc, T>(args.a, r, u, one);
    ring_b[d] = load_lane<kDesc, T>(args.b, r, u, zero);
  }
  float carry = args.x0 != nullptr ? to_float(args.x0[row]) : 0.f;
  for (int64_t i0 = 0; i0 < iterations; i0 += kDepth) {
#pragma unroll
    for (int d = 0; d < kDepth; ++d) {
      const int64_t i = i0 + d;
      if (i >= iterations) break;
      const LaneWords a = ring_a[d], b = ring_b[d];
      const int64_t u = i * W + lane * V;
      ring_a[d] = load_lane<kDesc, T>(args.a, r, u + kDepth * W, one);
      ring_b[d] = load_lane<kDesc, T>(args.b, r, u + kDepth * W, zero);
      const WarpScan s = warp_scan(lane_map<kDesc, T>(a, b), lane);
      emit_forward<kDesc>(args, r, row, u, a, b, apply(s.exclusive, carry));
      carry = apply(s.total, carry);  // the only dependency between iterations
    }
  }
}

// lookback: persistent blocks of kBdtLookbackWarps warps take items from the
// ticket counter, one at a time; warp w owns part w of the item, kIters
// iterations (32·kIters·V steps). A warp copies its part into shared memory
// (scan_warp_staging.cuh); lane l composes its run of kIters·V consecutive
// steps; a warp scan gives each lane the map from the state entering the part
// to its run, and the part's total map; the block turns the parts' totals into
// the state entering each part by one look-back for the whole item
// (block_carry_in); each lane then writes its run's x over its b slots, and the
// warp copies them out with coalesced stores.
template <class T, bool kDesc, bool kVectors, int kIters>
__global__ void __launch_bounds__(32 * kBdtLookbackWarps)
    scan_bdt_forward_lookback(const BdtForwardArgs<T> args) {
  constexpr int V = kLaneVector<T>;
  using Staging = ItemStaging<kIters, 2>;  // a, b (then x)
  extern __shared__ __align__(16) unsigned char block_shared[];
  __shared__ LookbackBlock<kBdtLookbackWarps> block;
  const BdtPlan& plan = args.plan;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const T one = from_float<T>(1.f), zero = from_float<T>(0.f);
  const Staging staging = Staging::of_warp(block_shared, warp, lane);
  const int run = lane * kIters;  // this lane's slots: run … run + kIters − 1
  const int64_t part_steps = int64_t(kIters) * 32 * V;

  unsigned claim = threadIdx.x == 0 ? atomicAdd(args.lookback.ticket, 1u) : 0u;
  for (;;) {
    const int64_t item = block_item(block, claim);  // also: every warp is done with its slots
    if (item >= plan.items) break;
    const int64_t row = item % plan.rows, chunk = item / plan.rows;
    const RowView r = forward_row<kVectors>(args, row);
    const int64_t first = chunk * plan.item_steps + warp * part_steps;
    const int64_t run_first = first + int64_t(run) * V;
#pragma unroll
    for (int k = 0; k < kIters; ++k) {
      const int64_t u = first + int64_t(32 * k + lane) * V;
      staging.template copy<kDesc>(0, k, args.a, r, u, one);
      staging.template copy<kDesc>(1, k, args.b, r, u, zero);
    }
    async_copy::commit();
    const float chain_start = (chunk == 0 && args.x0 != nullptr) ? to_float(args.x0[row]) : 0.f;
    async_copy::wait<0>();
    __syncwarp();  // every lane's copies have landed

    Affine run_map = identity_map();
#pragma unroll
    for (int m = 0; m < kIters; ++m) {
      const int64_t u = run_first + m * V;
      run_map = then(run_map, lane_map<kDesc, T>(staging.read(0, run + m, r, u, one),
                                                 staging.read(1, run + m, r, u, zero)));
    }
    const WarpScan s = warp_scan(run_map, lane);
    const float part_carry =
        block_carry_in(args.lookback, block, row, plan.chunks, chunk, chunk + 1 < plan.chunks,
                       s.total, chain_start, warp, lane);
    // The next ticket now (not earlier: a claimed item should be worked on at
    // once, or its successors wait for its map); the round trip overlaps pass 2.
    if (threadIdx.x == 0) claim = atomicAdd(args.lookback.ticket, 1u);

    float state = apply(s.exclusive, part_carry);
#pragma unroll
    for (int m = 0; m < kIters; ++m) {
      const int64_t u = run_first + m * V;
      LaneWords x;
      state = forward_lane_outputs<kDesc>(args, r, row, u, staging.read(0, run + m, r, u, one),
                                          staging.read(1, run + m, r, u, zero), state, x);
      staging.write(1, run + m, x);
    }
    __syncwarp();  // every lane's x is in its slots
#pragma unroll
    for (int k = 0; k < kIters; ++k) {
      const int64_t u = first + int64_t(32 * k + lane) * V;
      store_lane<kDesc>(args.x, r, u, staging.read(1, 32 * k + lane, r, u, zero));
    }
  }
}

// Dynamic shared memory of the lookback kernel (its item staging).
template <int kIters>
constexpr int forward_lookback_shared_bytes() {
  return item_staging_bytes<kIters, 2>(kBdtLookbackWarps);
}

}  // namespace flashrnn::scan_kernels

// The [B, D, T] forward kernels (scan_bdt_plan.h): x[u] = a[u]·x[u−1] + b[u]
// along each row, one warp per row (march) or per item of a row (lookback).
// Each reads a and b once and writes x once (and `last`): the floor's 3 tensors.
#pragma once

#include <cstdint>

#include "scan_bdt_plan.h"
#include "scan_lane_io.cuh"
#include "scan_math.cuh"
#include "scan_warp_lookback.cuh"
#include "scan_warp_scan.cuh"
#include "scan_warp_staging.cuh"

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

// The lane's V states from the state entering them; stores them (and `last`).
template <bool kDesc, class T>
__device__ __forceinline__ void emit_forward(const BdtForwardArgs<T>& args, const RowView& r,
                                             int64_t row, int64_t u, const LaneWords& a,
                                             const LaneWords& b, float state) {
  constexpr int V = kLaneVector<T>;
  const int final_step = final_step_in_lane(r, u, V);
  float x[V];
#pragma unroll
  for (int j = 0; j < V; ++j) {
    state = fmaf(lane_step<kDesc, T>(a, j), state, lane_step<kDesc, T>(b, j));
    x[j] = state;
    if (j == final_step) args.last[row] = from_float<T>(state);
  }
  store_lane<kDesc>(args.x, r, u, pack_lane<kDesc, T>(x));
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

// lookback: persistent warps take items (kIters iterations of one row) from the
// ticket counter. An item's inputs wait in the warp's shared memory (vector
// path; the scalar path reads global memory) and are read twice: for the
// item's total map, which the look-back needs, and, once the state entering the
// item is known, to scan again and write x. Registers stay few whatever the
// item length, and long items spread each look-back over more bytes.
// plan.prefetch (two stages only): the next item is claimed and copied while
// this one waits on its look-back; otherwise only after this one is written.
template <class T, bool kDesc, bool kVectors, int kIters>
__global__ void __launch_bounds__(kBdtThreadsPerBlock, kIters >= 8 ? 1 : 3)
    scan_bdt_forward_lookback(const BdtForwardArgs<T> args) {
  constexpr int V = kLaneVector<T>;
  constexpr int kStages = lookback_stages(kIters);
  using Staging = WarpStaging<kIters, 2>;  // a, b
  extern __shared__ __align__(16) unsigned char block_shared[];
  const BdtPlan& plan = args.plan;
  const bool prefetch = kStages > 1 && plan.prefetch;
  const int lane = threadIdx.x % 32;
  const int64_t W = plan.iteration_steps;
  const T one = from_float<T>(1.f), zero = from_float<T>(0.f);
  const Staging staging = Staging::of_warp(block_shared, threadIdx.x / 32, lane);
  // Copies of `item` into `stage` (the vector path), one commit group per item.
  const auto stage_item = [&](int64_t item, int stage) {
    if constexpr (kVectors) {
      if (item < plan.items) {
        const RowView r = forward_row<kVectors>(args, item % plan.rows);
        const int64_t start = (item / plan.rows) * plan.item_steps + lane * V;
#pragma unroll
        for (int k = 0; k < kIters; ++k) {
          staging.template copy<kDesc>(stage, k, 0, args.a, r, start + k * W);
          staging.template copy<kDesc>(stage, k, 1, args.b, r, start + k * W);
        }
      }
      commit_copies();
    }
  };
  // The lane's a and b of iteration k of the item at `start`.
  const auto inputs = [&](int stage, const RowView& r, int64_t start, int k, LaneWords& a,
                          LaneWords& b) {
    if constexpr (kVectors) {
      a = staging.read(stage, k, 0, r, start + k * W, one);
      b = staging.read(stage, k, 1, r, start + k * W, zero);
    } else {
      a = load_lane<kDesc, T>(args.a, r, start + k * W, one);
      b = load_lane<kDesc, T>(args.b, r, start + k * W, zero);
    }
  };

  int64_t item = claimed_item(claim_ticket(args.lookback, lane));
  unsigned next_ticket = prefetch ? claim_ticket(args.lookback, lane) : 0u;
  int stage = 0;
  stage_item(item, stage);
  while (item < plan.items) {
    const int other = kStages > 1 ? stage ^ 1 : 0;
    int64_t next = plan.items;
    if (prefetch) {
      next = claimed_item(next_ticket);
      next_ticket = claim_ticket(args.lookback, lane);
      stage_item(next, other);  // in flight while this item waits on its look-back
      wait_copies<1>();
    } else {
      wait_copies<0>();
    }
    const int64_t row = item % plan.rows, chunk = item / plan.rows;
    const RowView r = forward_row<kVectors>(args, row);
    const int64_t start = chunk * plan.item_steps + lane * V;
    Affine total = identity_map();
#pragma unroll
    for (int k = 0; k < kIters; ++k) {
      LaneWords a, b;
      inputs(stage, r, start, k, a, b);
      total = then(total, warp_scan(lane_map<kDesc, T>(a, b), lane).total);
    }
    const float chain_start =
        (chunk == 0 && args.x0 != nullptr) ? to_float(args.x0[row]) : 0.f;
    float carry = warp_carry_in(args.lookback, item, chunk, plan.rows, chunk + 1 < plan.chunks,
                                total, chain_start, lane);
#pragma unroll
    for (int k = 0; k < kIters; ++k) {
      LaneWords a, b;
      inputs(stage, r, start, k, a, b);
      const WarpScan s = warp_scan(lane_map<kDesc, T>(a, b), lane);
      emit_forward<kDesc>(args, r, row, start + k * W, a, b, apply(s.exclusive, carry));
      carry = apply(s.total, carry);
    }
    if (!prefetch) {
      next = claimed_item(claim_ticket(args.lookback, lane));
      stage_item(next, other);
    }
    item = next;
    stage = other;
  }
}

// Dynamic shared memory of the lookback kernel (its staging; none on the scalar path).
template <bool kVectors, int kIters>
constexpr int forward_lookback_shared_bytes() {
  return kVectors ? warp_staging_bytes<kIters, 2>(kBdtWarpsPerBlock) : 0;
}

}  // namespace flashrnn::scan_kernels

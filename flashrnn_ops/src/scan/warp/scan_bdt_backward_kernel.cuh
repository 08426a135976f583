// The fused [B, D, T] backward kernels (scan_bdt_plan.h). For the forward
// x[v] = a[v]·x[v−1] + b[v] and g = dL/dx (plus dL/dlast at the final step):
//
//   db[v] = g[v] + a[v+1]·db[v+1],   da[v] = db[v]·x[v−1],   dx0 = a[0]·db[0]
//
// scanned in the opposite order u: the gate of step u is a at step u−1 and the
// x[v−1] of step u is x at step u+1 (x0 after the row's end). Lanes pass these
// halo elements to their neighbours by shuffles; lane 0 carries the gate over
// from the previous iteration, lane 31 takes x from the next one. Reads a, x
// and g once and writes da and db once.
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
struct BdtBackwardArgs {
  BdtPlan plan;
  WarpLookback lookback;
  const T* a;
  const T* x;
  const T* x0;     // or null
  const T* dx;     // or null
  const T* dlast;  // or null
  T* da;
  T* db;
  T* dx0;  // or null
};

// One iteration of a lane: its V steps of a, x and g in this kernel's scan order.
template <class T, int V>
struct BackwardLane {
  LaneWords a, x, g;
};

// kVectors: 16-byte accesses (T % V == 0, aligned tensors); a template
// parameter, so that the scalar path costs the vector kernels no registers.
template <bool kVectors, class T>
__device__ __forceinline__ RowView backward_row(const BdtBackwardArgs<T>& args, int64_t row) {
  return RowView{row * args.plan.steps, args.plan.steps, kVectors};
}

template <bool kDesc, class T, int V>
__device__ __forceinline__ BackwardLane<T, V> load_backward_lane(const BdtBackwardArgs<T>& args,
                                                                 const RowView& r, int64_t u) {
  const T zero = from_float<T>(0.f);
  BackwardLane<T, V> in;
  in.a = load_lane<kDesc, T>(args.a, r, u, zero);
  in.x = load_lane<kDesc, T>(args.x, r, u, zero);
  if (args.dx != nullptr) {
    in.g = load_lane<kDesc, T>(args.dx, r, u, zero);
  } else {
    in.g = splat(zero);
  }
  return in;
}

// The lane's halo: the gate of its first step (a at u−1) and x after its last
// step (x at u+V). `a_from_before` is what lane 0 gets (a at the step before the
// iteration), `x_from_after` what lane 31 gets (x at the step after it).
struct Halo {
  float gate_first;
  float x_after;
};

template <bool kDesc, class T, int V>
__device__ __forceinline__ Halo exchange_halo(const BackwardLane<T, V>& in, float a_from_before,
                                              float x_from_after, int lane) {
  const float a_last = lane_step<kDesc, T>(in.a, V - 1);
  const float from_left = __shfl_sync(kFullWarp, a_last, (lane + 31) & 31);
  // Lane 0's first x is wanted by nobody this iteration: it passes lane 31's instead.
  const float x_first = lane == 0 ? x_from_after : lane_step<kDesc, T>(in.x, 0);
  Halo h;
  h.gate_first = lane == 0 ? a_from_before : from_left;
  h.x_after = __shfl_sync(kFullWarp, x_first, (lane + 1) & 31);
  return h;
}

// Step j of the lane as a map: gate a[u+j−1], input g[u+j] (+ dL/dlast at u = 0).
template <bool kDesc, class T, int V>
__device__ __forceinline__ Affine backward_step(const BackwardLane<T, V>& in, const Halo& h,
                                                int j, int64_t u, float dlast) {
  const float gate = j == 0 ? h.gate_first : lane_step<kDesc, T>(in.a, j > 0 ? j - 1 : 0);
  const float input = lane_step<kDesc, T>(in.g, j) + ((j == 0 && u == 0) ? dlast : 0.f);
  return Affine{gate, input};
}

template <bool kDesc, class T, int V>
__device__ __forceinline__ Affine backward_lane_map(const BackwardLane<T, V>& in, const Halo& h,
                                                    int64_t u, float dlast) {
  Affine m = backward_step<kDesc>(in, h, 0, u, dlast);
#pragma unroll
  for (int j = 1; j < V; ++j) m = then(m, backward_step<kDesc>(in, h, j, u, dlast));
  return m;
}

// db and da of the lane's V steps from the state entering them, packed (and
// dx0 at the row's final step); returns the state leaving them.
template <bool kDesc, class T, int V>
__device__ __forceinline__ float backward_lane_outputs(const BdtBackwardArgs<T>& args,
                                                       const RowView& r, int64_t row, int64_t u,
                                                       const BackwardLane<T, V>& in, const Halo& h,
                                                       float dlast, float x_end, float state,
                                                       LaneWords& da_words, LaneWords& db_words) {
  const int final_step = final_step_in_lane(r, u, V);  // its x[v−1] is x0
  float da[V], db[V];
#pragma unroll
  for (int j = 0; j < V; ++j) {
    state = apply(backward_step<kDesc>(in, h, j, u, dlast), state);
    const float x_prev = j >= final_step ? x_end
                         : j + 1 < V     ? lane_step<kDesc, T>(in.x, j + 1 < V ? j + 1 : j)
                                         : h.x_after;
    db[j] = state;
    da[j] = state * x_prev;
    if (args.dx0 != nullptr && j == final_step)
      args.dx0[row] = from_float<T>(lane_step<kDesc, T>(in.a, j) * state);
  }
  da_words = pack_lane<kDesc, T>(da);
  db_words = pack_lane<kDesc, T>(db);
  return state;
}

// db and da of the lane's V steps from the state entering them; stores them
// (and dx0 at the row's final step).
template <bool kDesc, class T, int V>
__device__ __forceinline__ void emit_backward(const BdtBackwardArgs<T>& args, const RowView& r,
                                              int64_t row, int64_t u, const BackwardLane<T, V>& in,
                                              const Halo& h, float dlast, float x_end,
                                              float state) {
  LaneWords da, db;
  backward_lane_outputs<kDesc>(args, r, row, u, in, h, dlast, x_end, state, da, db);
  store_lane<kDesc>(args.db, r, u, db);
  store_lane<kDesc>(args.da, r, u, da);
}

template <class T>
__device__ __forceinline__ float row_dlast(const BdtBackwardArgs<T>& args, int64_t row) {
  return args.dlast != nullptr ? to_float(args.dlast[row]) : 0.f;
}
template <class T>
__device__ __forceinline__ float row_x_end(const BdtBackwardArgs<T>& args, int64_t row) {
  return args.x0 != nullptr ? to_float(args.x0[row]) : 0.f;
}

// kDesc: this kernel's scan runs from t = T−1 down to 0 (the forward ran upwards).
//
// march: warp w of the grid walks row w with kDepth iterations' loads in
// flight (depth 2: up to 80 registers, 24 warps per SM; depth 4: 128, 16).
template <class T, bool kDesc, bool kVectors, int kDepth>
__global__ void __launch_bounds__(kBdtThreadsPerBlock, kDepth >= 4 ? 2 : 3)
    scan_bdt_backward_march(const BdtBackwardArgs<T> args) {
  constexpr int V = kLaneVector<T>;
  const int lane = threadIdx.x % 32;
  const int64_t row = int64_t(blockIdx.x) * kBdtWarpsPerBlock + threadIdx.x / 32;
  if (row >= args.plan.rows) return;  // the whole warp
  const RowView r = backward_row<kVectors>(args, row);
  const int64_t W = args.plan.iteration_steps;
  const int64_t iterations = (r.steps + W - 1) / W;
  const float dlast = row_dlast(args, row), x_end = row_x_end(args, row);

  BackwardLane<T, V> ring[kDepth];
#pragma unroll
  for (int d = 0; d < kDepth; ++d) ring[d] = load_backward_lane<kDesc, T, V>(args, r, d * W + lane * V);
  float carry = 0.f;
  float a_before = 0.f;  // lane 0: a at the step before the iteration
  for (int64_t i0 = 0; i0 < iterations; i0 += kDepth) {
#pragma unroll
    for (int d = 0; d < kDepth; ++d) {
      const int64_t i = i0 + d;
      if (i >= iterations) break;
      const BackwardLane<T, V> in = ring[d];
      const int64_t u = i * W + lane * V;
      ring[d] = load_backward_lane<kDesc, T, V>(args, r, u + kDepth * W);
      // Slot d + 1 holds the next iteration (loads past the row's end give zeros).
      const float x_next = lane_step<kDesc, T>(ring[(d + 1) % kDepth].x, 0);
      const Halo h = exchange_halo<kDesc>(in, a_before, x_next, lane);
      a_before = __shfl_sync(kFullWarp, lane_step<kDesc, T>(in.a, V - 1), 31);
      const WarpScan s = warp_scan(backward_lane_map<kDesc>(in, h, u, dlast), lane);
      emit_backward<kDesc>(args, r, row, u, in, h, dlast, x_end, apply(s.exclusive, carry));
      carry = apply(s.total, carry);
    }
  }
}

// lookback: as the forward lookback kernel (scan_bdt_forward_kernel.cuh), with
// a, x and g staged and da, db written over the x and g slots. A run's halo —
// a at the step before it, x at the step after it — is the neighbouring lane's
// slot, or, at the part's ends, one element loaded from global memory while
// the copies fly.
template <class T, bool kDesc, bool kVectors, int kIters>
__global__ void __launch_bounds__(32 * kBdtLookbackWarps)
    scan_bdt_backward_lookback(const BdtBackwardArgs<T> args) {
  constexpr int V = kLaneVector<T>;
  using Staging = ItemStaging<kIters, 3>;  // a, x, g (then da over x, db over g)
  extern __shared__ __align__(16) unsigned char block_shared[];
  __shared__ LookbackBlock<kBdtLookbackWarps> block;
  const BdtPlan& plan = args.plan;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const T zero = from_float<T>(0.f);
  const Staging staging = Staging::of_warp(block_shared, warp, lane);
  const int run = lane * kIters;  // this lane's slots: run … run + kIters − 1
  const int64_t part_steps = int64_t(kIters) * 32 * V;
  const auto inputs = [&](const RowView& r, int s, int64_t u) {
    return BackwardLane<T, V>{staging.read(0, s, r, u, zero), staging.read(1, s, r, u, zero),
                              staging.read(2, s, r, u, zero)};
  };

  unsigned claim = threadIdx.x == 0 ? atomicAdd(args.lookback.ticket, 1u) : 0u;
  for (;;) {
    const int64_t item = block_item(block, claim);  // also: every warp is done with its slots
    if (item >= plan.items) break;
    const int64_t row = item % plan.rows, chunk = item / plan.rows;
    const RowView r = backward_row<kVectors>(args, row);
    const int64_t first = chunk * plan.item_steps + warp * part_steps;
    const int64_t run_first = first + int64_t(run) * V;
#pragma unroll
    for (int k = 0; k < kIters; ++k) {
      const int64_t u = first + int64_t(32 * k + lane) * V;
      staging.template copy<kDesc>(0, k, args.a, r, u, zero);
      staging.template copy<kDesc>(1, k, args.x, r, u, zero);
      if (args.dx != nullptr)
        staging.template copy<kDesc>(2, k, args.dx, r, u, zero);
      else
        staging.write(2, 32 * k + lane, splat(zero));
    }
    async_copy::commit();
    // The part's halo, loaded while the copies fly: a before it (lane 0), x after it (lane 31).
    float halo = 0.f;
    if (lane == 0) halo = to_float(load_row_step<kDesc>(args.a, r, first - 1, zero));
    if (lane == 31) halo = to_float(load_row_step<kDesc>(args.x, r, first + part_steps, zero));
    const float dlast = row_dlast(args, row), x_end = row_x_end(args, row);
    async_copy::wait<0>();
    __syncwarp();  // every lane's copies have landed

    const int64_t after = run_first + kIters * V;
    const float a_before =
        lane == 0 ? halo : lane_step<kDesc, T>(staging.read(0, run - 1, r, run_first - V, zero), V - 1);
    const float x_after =
        lane == 31 ? halo : lane_step<kDesc, T>(staging.read(1, run + kIters, r, after, zero), 0);
    Affine run_map = identity_map();
    float gate = a_before;  // a at the step before slot m
#pragma unroll
    for (int m = 0; m < kIters; ++m) {
      const int64_t u = run_first + m * V;
      const BackwardLane<T, V> in = inputs(r, run + m, u);
      run_map = then(run_map, backward_lane_map<kDesc>(in, Halo{gate, 0.f}, u, dlast));
      gate = lane_step<kDesc, T>(in.a, V - 1);
    }
    const WarpScan s = warp_scan(run_map, lane);
    // (block_carry_in's barriers also order the halo reads above before any
    // slot is overwritten below.)
    const float part_carry = block_carry_in(args.lookback, block, row, plan.chunks, chunk,
                                            chunk + 1 < plan.chunks, s.total, 0.f, warp, lane);
    // The next ticket now (not earlier: a claimed item should be worked on at
    // once, or its successors wait for its map); the round trip overlaps pass 2.
    if (threadIdx.x == 0) claim = atomicAdd(args.lookback.ticket, 1u);

    float state = apply(s.exclusive, part_carry);
    gate = a_before;
    BackwardLane<T, V> in = inputs(r, run, run_first);
#pragma unroll
    for (int m = 0; m < kIters; ++m) {
      const int64_t u = run_first + m * V;
      const BackwardLane<T, V> next = inputs(r, run + (m + 1 < kIters ? m + 1 : m), u + V);
      const float x_next = m + 1 < kIters ? lane_step<kDesc, T>(next.x, 0) : x_after;
      LaneWords da, db;
      state = backward_lane_outputs<kDesc>(args, r, row, u, in, Halo{gate, x_next}, dlast, x_end,
                                           state, da, db);
      staging.write(1, run + m, da);
      staging.write(2, run + m, db);
      gate = lane_step<kDesc, T>(in.a, V - 1);
      in = next;
    }
    __syncwarp();  // every lane's da and db are in its slots
#pragma unroll
    for (int k = 0; k < kIters; ++k) {
      const int64_t u = first + int64_t(32 * k + lane) * V;
      store_lane<kDesc>(args.da, r, u, staging.read(1, 32 * k + lane, r, u, zero));
      store_lane<kDesc>(args.db, r, u, staging.read(2, 32 * k + lane, r, u, zero));
    }
  }
}

// Dynamic shared memory of the lookback kernel (its item staging).
template <int kIters>
constexpr int backward_lookback_shared_bytes() {
  return item_staging_bytes<kIters, 3>(kBdtLookbackWarps);
}

}  // namespace flashrnn::scan_kernels

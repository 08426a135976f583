// The fused backward kernel. For the forward x[v] = a[v]·x[v−1] + b[v] (v in the
// forward's order, x[−1] = x0) and g = dL/dx (plus dL/dlast at the final step):
//
//   db[v] = g[v] + a[v+1]·db[v+1]   (db[T] = 0: a scan in the opposite order)
//   da[v] = db[v]·x[v−1]
//   dx0   = a[0]·db[0]
//
// In this kernel's scan order u (the forward's order reversed) the gate of step
// u is a at step u−1 and the x[v−1] of step u is x at step u+1: one halo step
// per thread on each side. Reads a, x and g once and writes da and db once;
// persistent blocks copy the next tile's inputs into shared memory
// (scan_staging.cuh) while they scan the current one.
#pragma once

#include <cstdint>

#include "async_copy.cuh"
#include "scan/scan_math.cuh"
#include "scan/tile/scan_block.cuh"
#include "scan/tile/scan_staging.cuh"
#include "scan/tile/scan_tile_io.cuh"
#include "scan/tile/scan_tiling.h"

namespace flashrnn::scan_kernels {

template <class T>
struct BackwardArgs {
  ScanShape shape;  // of the forward; the kernel scans in the opposite order
  ScanTiling tiling;
  LookbackView lookback;
  bool vectors;
  const T* a;
  const T* x;
  const T* x0;     // or null
  const T* dx;     // or null
  const T* dlast;  // or null
  T* da;
  T* db;
  T* dx0;  // or null
};

// A thread's inputs of one tile, in registers: its steps of a, x and dL/dx, and
// the halo (the gate before its first step, x[v−1] after its last one).
template <class T, int S, int CH>
struct BackwardInputs {
  ThreadElements where;
  T a[S][CH], x[S][CH], g[S][CH];
  T a_before[CH], x_after[CH];
};

// The halo, loaded straight into registers when the tile's copies are issued.
template <bool kBtd, class T, int S, int CH>
__device__ __forceinline__ void load_halo(const BackwardArgs<T>& args, const ThreadElements& e,
                                          T (&a_before)[CH], T (&x_after)[CH]) {
  const T zero = from_float<T>(0.f);
  load_step<kBtd, CH>(args.a, e, e.first - 1, zero, a_before);
  if (e.first + S < e.steps) {
    load_step<kBtd, CH>(args.x, e, e.first + S, zero, x_after);
  } else {  // x[v−1] of forward step 0 is x0
#pragma unroll
    for (int c = 0; c < CH; ++c)
      x_after[c] = (args.x0 != nullptr && c < e.channels) ? args.x0[e.flat + c] : zero;
  }
}

template <bool kBtd, class T, int S, int CH, int kMaxChannels>
__device__ __forceinline__ void backward_tile(const BackwardArgs<T>& args, const LanePlace& lane,
                                              const TilePlace& tile,
                                              const BackwardInputs<T, S, CH>& in,
                                              BlockScanStorage<kMaxChannels>& smem) {
  const ScanTiling& tiling = args.tiling;
  const ThreadElements& e = in.where;
  float dlast[CH];
#pragma unroll
  for (int c = 0; c < CH; ++c)
    dlast[c] = (args.dlast != nullptr && e.first == 0 && c < e.channels)
                   ? to_float(args.dlast[e.flat + c])
                   : 0.f;

  // Step s of the thread as a map; steps past the end are the identity.
  const auto step = [&](int s, int c) {
    if (e.first + s >= e.steps) return identity_map();
    const float gate = to_float(s == 0 ? in.a_before[c] : in.a[s - 1][c]);
    const float input = to_float(in.g[s][c]) + (s == 0 ? dlast[c] : 0.f);
    return Affine{gate, input};
  };

  Affine total[CH];
#pragma unroll
  for (int c = 0; c < CH; ++c) total[c] = identity_map();
#pragma unroll
  for (int s = 0; s < S; ++s)
#pragma unroll
    for (int c = 0; c < CH; ++c) total[c] = then(total[c], step(s, c));

  Affine prefix[CH], tile_total = identity_map();
  tile_prefix(total, lane, tiling, smem, prefix, tile_total);
  const float carry = chain_carry_in(args.lookback, tile, tiling.rows,
                                     tile.time_tile + 1 < tiling.time_tiles,
                                     tiling.tile_channels, tile_total, 0.f, smem);
  if (int(threadIdx.x) < tiling.tile_channels) smem.carry[threadIdx.x] = carry;
  __syncthreads();

  float state[CH];
#pragma unroll
  for (int c = 0; c < CH; ++c) state[c] = apply(prefix[c], smem.carry[lane.slot * CH + c]);
  T da[S][CH], db[S][CH];
#pragma unroll
  for (int s = 0; s < S; ++s) {
    const bool x_prev_inside = s + 1 < S && e.first + s + 1 < e.steps;
#pragma unroll
    for (int c = 0; c < CH; ++c) {
      state[c] = apply(step(s, c), state[c]);
      const float x_prev = to_float(x_prev_inside ? in.x[s + 1 < S ? s + 1 : s][c] : in.x_after[c]);
      db[s][c] = from_float<T>(state[c]);
      da[s][c] = from_float<T>(state[c] * x_prev);
    }
    if (args.dx0 != nullptr && e.first + s == e.steps - 1) {  // forward step 0
#pragma unroll
      for (int c = 0; c < CH; ++c)
        if (c < e.channels) args.dx0[e.flat + c] = from_float<T>(to_float(in.a[s][c]) * state[c]);
    }
    store_completed<kBtd>(args.db, e, s, db);
    store_completed<kBtd>(args.da, e, s, da);
  }
}

// Shared memory the kernel's staging takes: 2 stages of a, x and dL/dx.
template <class T, bool kBtd>
constexpr int backward_staging_bytes() {
  constexpr ThreadShape kShape = thread_shape(kBtd);
  return 2 * 3 * ThreadVectors<T, kBtd, kShape.steps, kShape.channels>::kStageBytes;
}

template <class T, bool kBtd>
__global__ void __launch_bounds__(kThreadsPerTile, kBackwardMinBlocksPerSm)
    scan_backward_kernel(const BackwardArgs<T> args) {
  constexpr ThreadShape kShape = thread_shape(kBtd);
  constexpr int S = kShape.steps, CH = kShape.channels;
  using Vectors = ThreadVectors<T, kBtd, S, CH>;
  __shared__ BlockScanStorage<kWarpSize * CH> smem;
  extern __shared__ __align__(16) unsigned char staging[];  // [stage][a, x, dL/dx]
  const auto stage_of = [&](int stage, int tensor) {
    return staging + (stage * 3 + tensor) * Vectors::kStageBytes;
  };
  const T zero = from_float<T>(0.f);

  const ScanTiling& tiling = args.tiling;
  const LanePlace lane = place_lane<kBtd>(tiling, threadIdx.x);
  TileSchedule schedule{args.lookback};
  const auto place = [&](int64_t tile) {
    return place_elements<kBtd, S, CH>(args.shape, tiling, lane, place_tile(tiling, tile),
                                       !args.shape.reverse, args.vectors);
  };
  const auto stage_tile = [&](const ThreadElements& e, int stage) {
    stage_vectors<kBtd, S, CH>(args.a, e, stage_of(stage, 0));
    stage_vectors<kBtd, S, CH>(args.x, e, stage_of(stage, 1));
    if (args.dx != nullptr) stage_vectors<kBtd, S, CH>(args.dx, e, stage_of(stage, 2));
  };

  int64_t tile = schedule.first(smem);
  BackwardInputs<T, S, CH> in;
  in.where = ThreadElements{};
  int stage = 0;
  if (tile < tiling.tiles) {
    in.where = place(tile);
    stage_tile(in.where, stage);
    load_halo<kBtd, T, S, CH>(args, in.where, in.a_before, in.x_after);
  }
  async_copy::commit();
  while (tile < tiling.tiles) {
    // Copies of the next tile fly while this one is scanned.
    const int64_t next = schedule.next(tile, smem);
    ThreadElements upcoming{};
    T a_before[CH], x_after[CH];
    if (next < tiling.tiles) {
      upcoming = place(next);
      stage_tile(upcoming, stage ^ 1);
      load_halo<kBtd, T, S, CH>(args, upcoming, a_before, x_after);
    }
    async_copy::commit();
    async_copy::wait<1>();
    const ThreadElements& e = in.where;
    collect_steps<kBtd>(args.a, e, stage_of(stage, 0), zero, in.a);
    collect_steps<kBtd>(args.x, e, stage_of(stage, 1), zero, in.x);
    if (args.dx != nullptr) {
      collect_steps<kBtd>(args.dx, e, stage_of(stage, 2), zero, in.g);
    } else {
#pragma unroll
      for (int s = 0; s < S; ++s)
#pragma unroll
        for (int c = 0; c < CH; ++c) in.g[s][c] = zero;
    }
    backward_tile<kBtd>(args, lane, place_tile(tiling, tile), in, smem);
    in.where = upcoming;
#pragma unroll
    for (int c = 0; c < CH; ++c) {
      in.a_before[c] = a_before[c];
      in.x_after[c] = x_after[c];
    }
    stage ^= 1;
    tile = next;
  }
}

}  // namespace flashrnn::scan_kernels

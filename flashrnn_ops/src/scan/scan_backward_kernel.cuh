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
// persistent blocks load the next tile's inputs while they scan the current one.
#pragma once

#include <cstdint>

#include "scan_block.cuh"
#include "scan_math.cuh"
#include "scan_tile_io.cuh"
#include "scan_tiling.h"

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

template <bool kBtd, class T, int S, int CH>
__device__ __forceinline__ void load_backward_inputs(const BackwardArgs<T>& args,
                                                     const LanePlace& lane, const TilePlace& tile,
                                                     BackwardInputs<T, S, CH>& in) {
  const T zero = from_float<T>(0.f);
  in.where = place_elements<kBtd, S, CH>(args.shape, args.tiling, lane, tile,
                                         !args.shape.reverse, args.vectors);
  const ThreadElements& e = in.where;
  load_steps<kBtd>(args.a, e, zero, in.a);
  load_steps<kBtd>(args.x, e, zero, in.x);
  if (args.dx != nullptr) {
    load_steps<kBtd>(args.dx, e, zero, in.g);
  } else {
#pragma unroll
    for (int s = 0; s < S; ++s)
#pragma unroll
      for (int c = 0; c < CH; ++c) in.g[s][c] = zero;
  }
  load_step<kBtd, CH>(args.a, e, e.first - 1, zero, in.a_before);
  if (e.first + S < e.steps) {
    load_step<kBtd, CH>(args.x, e, e.first + S, zero, in.x_after);
  } else {  // x[v−1] of forward step 0 is x0
#pragma unroll
    for (int c = 0; c < CH; ++c)
      in.x_after[c] = (args.x0 != nullptr && c < e.channels) ? args.x0[e.flat + c] : zero;
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

template <class T, bool kBtd>
__global__ void __launch_bounds__(kThreadsPerTile) scan_backward_kernel(const BackwardArgs<T> args) {
  constexpr ThreadShape kShape = thread_shape(kBtd);
  constexpr int S = kShape.steps, CH = kShape.channels;
  __shared__ BlockScanStorage<kWarpSize * CH> smem;

  const ScanTiling& tiling = args.tiling;
  const LanePlace lane = place_lane<kBtd>(tiling, threadIdx.x);
  const TileSchedule schedule{args.lookback};
  int64_t tile = schedule.first(smem);
  BackwardInputs<T, S, CH> current;
  if (tile < tiling.tiles) load_backward_inputs<kBtd>(args, lane, place_tile(tiling, tile), current);
  while (tile < tiling.tiles) {
    const int64_t next = schedule.next(tile, smem);
    BackwardInputs<T, S, CH> upcoming;
    if (next < tiling.tiles)
      load_backward_inputs<kBtd>(args, lane, place_tile(tiling, next), upcoming);
    backward_tile<kBtd>(args, lane, place_tile(tiling, tile), current, smem);
    current = upcoming;
    tile = next;
  }
}

}  // namespace flashrnn::scan_kernels

// The fused backward kernel. For the forward x[v] = a[v]·x[v−1] + b[v] (v in the
// forward's order, x[−1] = x0) and g = dL/dx (plus dL/dlast at the final step):
//
//   db[v] = g[v] + a[v+1]·db[v+1]   (db[T] = 0: a scan in the opposite order)
//   da[v] = db[v]·x[v−1]
//   dx0   = a[0]·db[0]
//
// In this kernel's scan order u (the forward's order reversed) the gate of step
// u is a at step u−1 and the x[v−1] of step u is x at step u+1: one halo step
// per thread on each side. Reads a, x and g once and writes da and db once.
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

template <class T, bool kBtd>
__global__ void __launch_bounds__(kThreadsPerTile, 2) scan_backward_kernel(const BackwardArgs<T> args) {
  constexpr ThreadShape kShape = thread_shape(kBtd);
  constexpr int S = kShape.steps, CH = kShape.channels;
  __shared__ BlockScanStorage<kWarpSize * CH> smem;

  const ScanTiling& tiling = args.tiling;
  const int64_t tile = claim_tile(args.lookback, smem);
  const int64_t row = tile / tiling.time_tiles, time_tile = tile % tiling.time_tiles;
  const LanePlace lane = place_lane<kBtd>(tiling, threadIdx.x);
  const ThreadElements e = place_elements<kBtd, S, CH>(args.shape, tiling, lane, row, time_tile,
                                                       !args.shape.reverse, args.vectors);
  const T zero = from_float<T>(0.f);

  T a[S][CH], x[S][CH], g[S][CH];
  load_steps<kBtd>(args.a, e, zero, a);
  load_steps<kBtd>(args.x, e, zero, x);
  if (args.dx != nullptr) {
    load_steps<kBtd>(args.dx, e, zero, g);
  } else {
#pragma unroll
    for (int s = 0; s < S; ++s)
#pragma unroll
      for (int c = 0; c < CH; ++c) g[s][c] = zero;
  }
  // Halo: the gate of the first step, and x[v−1] of the last step (x0 past the end).
  T a_before[CH], x_after[CH];
  load_step<kBtd, CH>(args.a, e, e.first - 1, zero, a_before);
  if (e.first + S < e.steps) {
    load_step<kBtd, CH>(args.x, e, e.first + S, zero, x_after);
  } else {
#pragma unroll
    for (int c = 0; c < CH; ++c)
      x_after[c] = (args.x0 != nullptr && c < e.channels) ? args.x0[e.flat + c] : zero;
  }
  float dlast[CH];
#pragma unroll
  for (int c = 0; c < CH; ++c)
    dlast[c] = (args.dlast != nullptr && e.first == 0 && c < e.channels)
                   ? to_float(args.dlast[e.flat + c])
                   : 0.f;

  // Step s of the thread as a map; steps past the end are the identity.
  const auto step = [&](int s, int c) {
    if (e.first + s >= e.steps) return identity_map();
    const float gate = to_float(s == 0 ? a_before[c] : a[s - 1][c]);
    const float input = to_float(g[s][c]) + (s == 0 ? dlast[c] : 0.f);
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
  const float carry = chain_carry_in(args.lookback, tile, time_tile,
                                     time_tile + 1 < tiling.time_tiles, tiling.tile_channels,
                                     tile_total, 0.f, smem);
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
      const float x_prev = to_float(x_prev_inside ? x[s + 1 < S ? s + 1 : s][c] : x_after[c]);
      db[s][c] = from_float<T>(state[c]);
      da[s][c] = from_float<T>(state[c] * x_prev);
    }
    if (args.dx0 != nullptr && e.first + s == e.steps - 1) {  // forward step 0
#pragma unroll
      for (int c = 0; c < CH; ++c)
        if (c < e.channels) args.dx0[e.flat + c] = from_float<T>(to_float(a[s][c]) * state[c]);
    }
    store_completed<kBtd>(args.db, e, s, db);
    store_completed<kBtd>(args.da, e, s, da);
  }
}

}  // namespace flashrnn::scan_kernels

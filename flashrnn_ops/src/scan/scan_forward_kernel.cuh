// The forward kernel: x[u] = a[u]·x[u−1] + b[u] in scan order, one tile per block.
// Reads a and b once and writes x once (plus the last step's state): the
// memory traffic is the 3 tensors, which is the floor.
#pragma once

#include <cstdint>

#include "scan_block.cuh"
#include "scan_math.cuh"
#include "scan_tile_io.cuh"
#include "scan_tiling.h"

namespace flashrnn::scan_kernels {

template <class T>
struct ForwardArgs {
  ScanShape shape;
  ScanTiling tiling;
  LookbackView lookback;
  bool vectors;  // 16-byte accesses allowed
  const T* a;
  const T* b;
  const T* x0;  // or null
  T* x;
  T* last;
};

template <class T, bool kBtd>
__global__ void __launch_bounds__(kThreadsPerTile, 3) scan_forward_kernel(const ForwardArgs<T> args) {
  constexpr ThreadShape kShape = thread_shape(kBtd);
  constexpr int S = kShape.steps, CH = kShape.channels;
  __shared__ BlockScanStorage<kWarpSize * CH> smem;

  const ScanTiling& tiling = args.tiling;
  const int64_t tile = claim_tile(args.lookback, smem);
  const int64_t row = tile / tiling.time_tiles, time_tile = tile % tiling.time_tiles;
  const LanePlace lane = place_lane<kBtd>(tiling, threadIdx.x);
  const ThreadElements e = place_elements<kBtd, S, CH>(args.shape, tiling, lane, row, time_tile,
                                                       args.shape.reverse, args.vectors);

  T a[S][CH], b[S][CH];
  load_steps<kBtd>(args.a, e, from_float<T>(1.f), a);
  load_steps<kBtd>(args.b, e, from_float<T>(0.f), b);

  Affine total[CH];
#pragma unroll
  for (int c = 0; c < CH; ++c) total[c] = identity_map();
#pragma unroll
  for (int s = 0; s < S; ++s)
#pragma unroll
    for (int c = 0; c < CH; ++c) total[c] = then(total[c], Affine{to_float(a[s][c]), to_float(b[s][c])});

  Affine prefix[CH], tile_total = identity_map();
  tile_prefix(total, lane, tiling, smem, prefix, tile_total);

  float chain_start = 0.f;
  if (args.x0 != nullptr && time_tile == 0 && int(threadIdx.x) < tiling.tile_channels) {
    const int64_t flat = tile_channel_flat<kBtd>(args.shape, tiling, row, threadIdx.x);
    if (flat >= 0) chain_start = to_float(args.x0[flat]);
  }
  const float carry = chain_carry_in(args.lookback, tile, time_tile,
                                     time_tile + 1 < tiling.time_tiles, tiling.tile_channels,
                                     tile_total, chain_start, smem);
  if (int(threadIdx.x) < tiling.tile_channels) smem.carry[threadIdx.x] = carry;
  __syncthreads();

  float state[CH];
#pragma unroll
  for (int c = 0; c < CH; ++c) state[c] = apply(prefix[c], smem.carry[lane.slot * CH + c]);
  T x[S][CH];
#pragma unroll
  for (int s = 0; s < S; ++s) {
#pragma unroll
    for (int c = 0; c < CH; ++c) {
      state[c] = fmaf(to_float(a[s][c]), state[c], to_float(b[s][c]));
      x[s][c] = from_float<T>(state[c]);
    }
    if (e.first + s == e.steps - 1) {  // the final step: also the `last` output
#pragma unroll
      for (int c = 0; c < CH; ++c)
        if (c < e.channels) args.last[e.flat + c] = x[s][c];
    }
    store_completed<kBtd>(args.x, e, s, x);
  }
}

}  // namespace flashrnn::scan_kernels

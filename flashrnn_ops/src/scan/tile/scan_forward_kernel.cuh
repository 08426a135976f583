// The forward kernel: x[u] = a[u]·x[u−1] + b[u] in scan order. Reads a and b
// once and writes x once (plus the last step's state): the memory traffic is
// the 3 tensors, which is the floor. Persistent blocks copy the next tile's a
// and b into shared memory (scan_staging.cuh) while they scan the current one.
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
struct ForwardArgs {
  ScanShape shape;
  ScanTiling tiling;
  LookbackView lookback;
  bool vectors;  // vector accesses allowed
  const T* a;
  const T* b;
  const T* x0;  // or null
  T* x;
  T* last;
};

// A thread's inputs of one tile, in registers.
template <class T, int S, int CH>
struct ForwardInputs {
  ThreadElements where;
  T a[S][CH];
  T b[S][CH];
};

template <bool kBtd, class T, int S, int CH, int kMaxChannels>
__device__ __forceinline__ void forward_tile(const ForwardArgs<T>& args, const LanePlace& lane,
                                             const TilePlace& tile,
                                             const ForwardInputs<T, S, CH>& in,
                                             BlockScanStorage<kMaxChannels>& smem) {
  const ScanTiling& tiling = args.tiling;
  const ThreadElements& e = in.where;
  Affine total[CH];
#pragma unroll
  for (int c = 0; c < CH; ++c) total[c] = identity_map();
#pragma unroll
  for (int s = 0; s < S; ++s)
#pragma unroll
    for (int c = 0; c < CH; ++c)
      total[c] = then(total[c], Affine{to_float(in.a[s][c]), to_float(in.b[s][c])});

  Affine prefix[CH], tile_total = identity_map();
  tile_prefix(total, lane, tiling, smem, prefix, tile_total);

  float chain_start = 0.f;
  if (args.x0 != nullptr && tile.time_tile == 0 && int(threadIdx.x) < tiling.tile_channels) {
    const int64_t flat = tile_channel_flat<kBtd>(args.shape, tiling, tile.row, threadIdx.x);
    if (flat >= 0) chain_start = to_float(args.x0[flat]);
  }
  const float carry = chain_carry_in(args.lookback, tile, tiling.rows,
                                     tile.time_tile + 1 < tiling.time_tiles,
                                     tiling.tile_channels, tile_total, chain_start, smem);
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
      state[c] = fmaf(to_float(in.a[s][c]), state[c], to_float(in.b[s][c]));
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

// Shared memory the kernel's staging takes: 2 stages of a and b.
template <class T, bool kBtd>
constexpr int forward_staging_bytes() {
  constexpr ThreadShape kShape = thread_shape(kBtd);
  return 2 * 2 * ThreadVectors<T, kBtd, kShape.steps, kShape.channels>::kStageBytes;
}

template <class T, bool kBtd>
__global__ void __launch_bounds__(kThreadsPerTile, kForwardMinBlocksPerSm)
    scan_forward_kernel(const ForwardArgs<T> args) {
  constexpr ThreadShape kShape = thread_shape(kBtd);
  constexpr int S = kShape.steps, CH = kShape.channels;
  using Vectors = ThreadVectors<T, kBtd, S, CH>;
  __shared__ BlockScanStorage<kWarpSize * CH> smem;
  extern __shared__ __align__(16) unsigned char staging[];  // [stage][a, b]
  const auto stage_of = [&](int stage, int tensor) {
    return staging + (stage * 2 + tensor) * Vectors::kStageBytes;
  };

  const ScanTiling& tiling = args.tiling;
  const LanePlace lane = place_lane<kBtd>(tiling, threadIdx.x);
  TileSchedule schedule{args.lookback};
  const auto place = [&](int64_t tile) {
    return place_elements<kBtd, S, CH>(args.shape, tiling, lane, place_tile(tiling, tile),
                                       args.shape.reverse, args.vectors);
  };
  const auto stage_tile = [&](const ThreadElements& e, int stage) {
    stage_vectors<kBtd, S, CH>(args.a, e, stage_of(stage, 0));
    stage_vectors<kBtd, S, CH>(args.b, e, stage_of(stage, 1));
  };

  int64_t tile = schedule.first(smem);
  ThreadElements current{};
  int stage = 0;
  if (tile < tiling.tiles) {
    current = place(tile);
    stage_tile(current, stage);
  }
  async_copy::commit();
  while (tile < tiling.tiles) {
    // Copies of the next tile fly while this one is scanned.
    const int64_t next = schedule.next(tile, smem);
    ThreadElements upcoming{};
    if (next < tiling.tiles) {
      upcoming = place(next);
      stage_tile(upcoming, stage ^ 1);
    }
    async_copy::commit();
    async_copy::wait<1>();
    ForwardInputs<T, S, CH> in;
    in.where = current;
    collect_steps<kBtd>(args.a, current, stage_of(stage, 0), from_float<T>(1.f), in.a);
    collect_steps<kBtd>(args.b, current, stage_of(stage, 1), from_float<T>(0.f), in.b);
    forward_tile<kBtd>(args, lane, place_tile(tiling, tile), in, smem);
    current = upcoming;
    stage ^= 1;
    tile = next;
  }
}

}  // namespace flashrnn::scan_kernels

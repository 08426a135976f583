// The scan inside a tile and between the tiles of a chain.
//
// Inside a tile: each thread composes its S steps into one affine map; a warp
// scans those maps across its time groups with shuffles; the 8 warp totals go
// through shared memory. Between tiles: a decoupled look-back (single-pass
// prefix scan, Merrill & Garland 2016). Each tile publishes its total map as soon
// as it is known, then walks back over its predecessors' published maps until
// it meets one that has published its inclusive state; from that it knows the
// state entering the tile, and publishes its own inclusive state. Tiles are
// taken in launch order from a ticket counter (TileSchedule), so every
// predecessor a tile waits for is owned by a block that is running: no
// deadlock, whatever the scheduling.
#pragma once

#include <cstdint>

#include "gpu_flags.cuh"
#include "scan/scan_math.cuh"
#include "scan/tile/scan_tile_io.cuh"
#include "scan/tile/scan_tiling.h"

namespace flashrnn::scan_kernels {

// Look-back status of a tile.
enum : uint32_t { kPending = 0, kAggregateReady = 1, kInclusiveReady = 2 };

// Pointers into the look-back workspace (lookback_layout); null for chains of one tile.
struct LookbackView {
  uint32_t* ticket = nullptr;
  uint32_t* flags = nullptr;        // [tiles]
  float2* aggregates = nullptr;     // [tiles, tile_channels] the tile's map (a, b)
  float* inclusive = nullptr;       // [tiles, tile_channels] the state leaving the tile
};

template <int kMaxChannels>
struct BlockScanStorage {
  Affine warp_totals[kWarpsPerTile][kMaxChannels];  // then: each warp's exclusive prefix
  float carry[kMaxChannels];                        // state entering the tile
  int64_t tiles[2];                                 // claimed tiles, alternately
  uint32_t predecessor_status;
  int window_count;
  int window_found;
};

using gpu_flags::load_acquire;
using gpu_flags::store_release;

// The order in which a persistent block takes tiles. With a look-back, tiles
// come from the ticket counter (launch order, so every tile a block waits for
// is already owned by a running block, and each block finishes its current tile
// before it waits on anything for the next); otherwise block b takes tiles
// b, b + grid, b + 2·grid, …
struct TileSchedule {
  const LookbackView& lookback;
  int claims = 0;

  template <int kMaxChannels>
  __device__ __forceinline__ int64_t first(BlockScanStorage<kMaxChannels>& smem) {
    return lookback.ticket == nullptr ? int64_t(blockIdx.x) : claim(smem);
  }
  // Every thread of the block must call it (it may synchronise the block).
  template <int kMaxChannels>
  __device__ __forceinline__ int64_t next(int64_t current, BlockScanStorage<kMaxChannels>& smem) {
    return lookback.ticket == nullptr ? current + gridDim.x : claim(smem);
  }

 private:
  // Claims alternate between two slots: a slot is rewritten two claims later,
  // after the barrier of the claim in between, so every thread has read it.
  template <int kMaxChannels>
  __device__ __forceinline__ int64_t claim(BlockScanStorage<kMaxChannels>& smem) {
    int64_t& slot = smem.tiles[claims++ & 1];
    if (threadIdx.x == 0) slot = atomicAdd(lookback.ticket, 1u);
    __syncthreads();
    return slot;
  }
};

// Scans the threads' maps across the tile. In: each thread's composed map per
// channel. Out: the map from the state entering the tile to the state entering
// the thread's first step (per channel); and, for threads tid < tile_channels,
// the whole tile's map of tile channel tid.
template <int CH, int kMaxChannels>
__device__ __forceinline__ void tile_prefix(const Affine (&thread_total)[CH],
                                            const LanePlace& lane, const ScanTiling& tiling,
                                            BlockScanStorage<kMaxChannels>& smem,
                                            Affine (&thread_prefix)[CH], Affine& tile_total) {
  constexpr unsigned kAll = 0xffffffffu;
  Affine inclusive[CH];
#pragma unroll
  for (int c = 0; c < CH; ++c) inclusive[c] = thread_total[c];
  for (int k = 1; k < tiling.groups_per_warp; k <<= 1) {
#pragma unroll
    for (int c = 0; c < CH; ++c) {
      const Affine earlier{__shfl_up_sync(kAll, inclusive[c].a, k * lane.group_stride),
                           __shfl_up_sync(kAll, inclusive[c].b, k * lane.group_stride)};
      if (lane.group >= k) inclusive[c] = then(earlier, inclusive[c]);
    }
  }
  Affine lane_exclusive[CH];
#pragma unroll
  for (int c = 0; c < CH; ++c) {
    const Affine earlier{__shfl_up_sync(kAll, inclusive[c].a, lane.group_stride),
                         __shfl_up_sync(kAll, inclusive[c].b, lane.group_stride)};
    lane_exclusive[c] = lane.group > 0 ? earlier : identity_map();
  }
  if (lane.group == tiling.groups_per_warp - 1) {
#pragma unroll
    for (int c = 0; c < CH; ++c) smem.warp_totals[lane.warp][lane.slot * CH + c] = inclusive[c];
  }
  __syncthreads();
  // One thread per tile channel turns the warp totals into exclusive prefixes.
  if (int(threadIdx.x) < tiling.tile_channels) {
    Affine running = identity_map();
#pragma unroll
    for (int w = 0; w < kWarpsPerTile; ++w) {
      const Affine warp_total = smem.warp_totals[w][threadIdx.x];
      smem.warp_totals[w][threadIdx.x] = running;
      running = then(running, warp_total);
    }
    tile_total = running;
  }
  __syncthreads();
#pragma unroll
  for (int c = 0; c < CH; ++c)
    thread_prefix[c] = then(smem.warp_totals[lane.warp][lane.slot * CH + c], lane_exclusive[c]);
}

// The state entering `tile`, for threads tid < channels; every thread of the
// block must call it. The tile's predecessor in its chain is `chain_stride`
// tiles before it. `chain_start` is the state before the chain (x0 or zero),
// used by the chain's first tile. Publishes this tile's inclusive state when
// the look-back is on and a successor exists.
template <int kMaxChannels>
__device__ __forceinline__ float chain_carry_in(const LookbackView& lookback, const TilePlace& place,
                                                int64_t chain_stride, bool has_successor,
                                                int channels, Affine tile_total,
                                                float chain_start,
                                                BlockScanStorage<kMaxChannels>& smem) {
  const int tid = threadIdx.x;
  const bool channel_thread = tid < channels;
  const int64_t tile = place.tile;
  float carry = chain_start;
  if (lookback.flags == nullptr) return carry;
  const int64_t my_values = tile * channels + tid;

  if (place.time_tile > 0) {
    // Publish the tile's map unless the predecessor already knows its state.
    if (tid == 0) smem.predecessor_status = load_acquire(lookback.flags + tile - chain_stride);
    __syncthreads();
    if (smem.predecessor_status != kInclusiveReady) {
      if (channel_thread) {
        lookback.aggregates[my_values] = make_float2(tile_total.a, tile_total.b);
        __threadfence();
      }
      __syncthreads();
      if (tid == 0) store_release(lookback.flags + tile, kAggregateReady);
    }

    // Walk back in windows of 32 predecessors; warp 0 reads their status.
    const int64_t chain_first = place.row;
    int64_t newest = tile - chain_stride;
    Affine later = identity_map();  // the maps of tiles (newest, tile)
    for (;;) {
      if (tid < kWarpSize) {
        const int64_t p = newest - tid * chain_stride;
        int count;
        bool found;
        for (;;) {
          const uint32_t status = p >= chain_first ? load_acquire(lookback.flags + p) : kPending;
          const unsigned pending = __ballot_sync(0xffffffffu, status == kPending);
          const unsigned inclusive = __ballot_sync(0xffffffffu, status == kInclusiveReady);
          const int first_pending = pending ? __ffs(pending) - 1 : kWarpSize;
          const int first_inclusive = inclusive ? __ffs(inclusive) - 1 : kWarpSize;
          found = first_inclusive < first_pending;
          count = found ? first_inclusive + 1 : first_pending;
          if (count > 0) break;
          __nanosleep(100);
        }
        if (tid == 0) {
          smem.window_count = count;
          smem.window_found = found;
        }
      }
      __syncthreads();
      const int count = smem.window_count;
      const bool found = smem.window_found;
      if (channel_thread) {
        const int aggregates = found ? count - 1 : count;
#pragma unroll 4
        for (int j = 0; j < aggregates; ++j) {
          const float2 m = __ldcg(lookback.aggregates + (newest - j * chain_stride) * channels + tid);
          later = then(Affine{m.x, m.y}, later);
        }
        if (found)
          carry = apply(later, __ldcg(lookback.inclusive +
                                      (newest - aggregates * chain_stride) * channels + tid));
      }
      __syncthreads();  // the window fields are rewritten next round
      if (found) break;
      newest -= count * chain_stride;
    }
  }

  if (has_successor) {
    if (channel_thread) {
      lookback.inclusive[my_values] = apply(tile_total, carry);
      __threadfence();
    }
    __syncthreads();
    if (tid == 0) store_release(lookback.flags + tile, kInclusiveReady);
  }
  return carry;
}

}  // namespace flashrnn::scan_kernels

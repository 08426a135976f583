// Which elements each thread of a tile owns: plain C++ shared by the kernels
// and the CPU tests (which check that the threads of all tiles cover every
// element exactly once).
//
// "Scan order" u = 0..T−1 is the order in which a kernel's recurrence runs;
// physical time is t = u (ascending) or t = T−1−u (descending). Each thread owns
// S consecutive scan steps of CH channels.
#pragma once

#include <cstdint>

#include "scan/tile/scan_tiling.h"

#if defined(__CUDACC__)
#define SCAN_HD __host__ __device__ __forceinline__
#else
#define SCAN_HD inline
#endif

namespace flashrnn::scan_kernels {

// A thread's position inside its tile: which channel slot, which time group.
struct LanePlace {
  int warp;
  int slot;          // channel slot in the warp
  int group;         // time group in the warp
  int group_stride;  // lanes between time-neighbouring groups of one slot
};

// `thread` is the thread's index in its block (threadIdx.x on the device).
template <bool kBtd>
SCAN_HD LanePlace place_lane(const ScanTiling& tiling, int thread) {
  const int lane = thread % kWarpSize;
  LanePlace p;
  p.warp = thread / kWarpSize;
  if constexpr (kBtd) {  // neighbouring lanes take neighbouring channels
    p.slot = lane % tiling.slots_per_warp;
    p.group = lane / tiling.slots_per_warp;
    p.group_stride = tiling.slots_per_warp;
  } else {  // neighbouring lanes take neighbouring steps
    p.slot = lane / tiling.groups_per_warp;
    p.group = lane % tiling.groups_per_warp;
    p.group_stride = 1;
  }
  return p;
}

// Tile `tile` of the launch, row-fastest: tiles that follow one another in time
// are `rows` apart, so a tile's predecessor was started `rows` tiles earlier
// and, with many channels, has long finished when the tile needs its state.
struct TilePlace {
  int64_t tile;
  int64_t row;        // which channels
  int64_t time_tile;  // position in the chain
};

SCAN_HD TilePlace place_tile(const ScanTiling& tiling, int64_t tile) {
  return {tile, tile % tiling.rows, tile / tiling.rows};
}

// The elements one thread owns.
struct ThreadElements {
  int64_t base;         // element offset of channel 0 at physical t = 0
  int64_t flat;         // index of channel 0 in the [B, D] tensors
  int channels;         // how many of the thread's CH channels exist (0..CH)
  int64_t first;        // first scan step
  int64_t steps;        // T
  int64_t time_stride;  // elements between t and t+1
  bool descending;      // scan order runs from t = T−1 down to 0
  bool vectors;         // 16-byte accesses are aligned and inside the tensor

  SCAN_HD int64_t offset(int64_t u) const {
    return base + (descending ? steps - 1 - u : u) * time_stride;
  }
};

// The [B, D] index of tile channel `c` of tile row `row`, or −1 past the edge.
template <bool kBtd>
SCAN_HD int64_t tile_channel_flat(const ScanShape& shape, const ScanTiling& tiling, int64_t row,
                                  int c) {
  if constexpr (kBtd) {
    const int64_t batch = row / tiling.channel_blocks;
    const int64_t d = (row % tiling.channel_blocks) * tiling.tile_channels + c;
    return d < shape.channels ? batch * shape.channels + d : -1;
  } else {
    const int64_t channel = row * tiling.tile_channels + c;
    return channel < shape.batch * shape.channels ? channel : -1;
  }
}

template <bool kBtd, int S, int CH>
SCAN_HD ThreadElements place_elements(const ScanShape& shape, const ScanTiling& tiling,
                                      const LanePlace& lane, const TilePlace& tile,
                                      bool descending, bool vectors) {
  ThreadElements e;
  const int64_t first_channel = tile_channel_flat<kBtd>(shape, tiling, tile.row, lane.slot * CH);
  const int64_t group = int64_t(lane.warp) * tiling.groups_per_warp + lane.group;
  e.first = tile.time_tile * tiling.tile_steps + group * S;
  e.steps = shape.steps;
  e.descending = descending;
  e.vectors = vectors;
  e.flat = first_channel < 0 ? 0 : first_channel;
  if constexpr (kBtd) {
    const int64_t d = first_channel < 0 ? shape.channels : first_channel % shape.channels;
    const int64_t remaining = shape.channels - d;
    e.channels = int(remaining < CH ? remaining : CH);
    e.time_stride = shape.channels;
    e.base = first_channel < 0 ? 0 : (e.flat - d) * shape.steps + d;  // batch·T·D + d
  } else {
    e.channels = first_channel < 0 ? 0 : 1;
    e.time_stride = 1;
    e.base = e.flat * shape.steps;
  }
  return e;
}

}  // namespace flashrnn::scan_kernels

// How the scan kernels cut a problem into tiles; plain C++ shared by the host
// launcher, the kernels and the CPU tests.
//
// A tile is what one thread block (kWarpsPerTile warps, 8 by default) works on
// at a time. It covers `tile_channels` channels and `tile_steps` consecutive
// steps in scan order. Each thread owns `channels_per_thread` channels ×
// `steps_per_thread` consecutive steps; a warp holds `slots_per_warp` channel
// slots side by side, each with `groups_per_warp` time groups; the warps of a
// block follow one another in time.
//
//   [B, D, T]: a thread's steps are contiguous in memory (16-byte vectors along
//              time, one channel per slot); lanes of a slot are neighbours in time.
//   [B, T, D]: a thread's channels are contiguous (one vector per step); lanes
//              next to each other take the next channels, so a warp reads whole
//              rows of D without any transpose.
//
// Tiles that follow one another in time form a chain; a tile learns the state
// entering it from its predecessors by a decoupled look-back (scan_block.cuh),
// so long sequences with few channels still spread over the whole GPU. Blocks
// are persistent: each works through tiles in launch order (scan_block.cuh),
// loading the next tile while it scans the current one.
#pragma once

#include <cstddef>
#include <cstdint>

#include "scan/scan_params.h"

namespace flashrnn::scan_kernels {

// Tuning knobs, fixed at compile time (scanbench's results are for the defaults).
#ifndef FLASHRNN_SCAN_WARPS
#define FLASHRNN_SCAN_WARPS 8
#endif
#ifndef FLASHRNN_SCAN_BDT_STEPS
#define FLASHRNN_SCAN_BDT_STEPS 16
#endif
#ifndef FLASHRNN_SCAN_BTD_STEPS
#define FLASHRNN_SCAN_BTD_STEPS 4
#endif
// Threads per SM the register allocation must leave room for (launch bounds).
#ifndef FLASHRNN_SCAN_FW_THREADS_PER_SM
#define FLASHRNN_SCAN_FW_THREADS_PER_SM 512
#endif
#ifndef FLASHRNN_SCAN_BW_THREADS_PER_SM
#define FLASHRNN_SCAN_BW_THREADS_PER_SM 512
#endif

constexpr int kWarpSize = 32;
constexpr int kWarpsPerTile = FLASHRNN_SCAN_WARPS;
constexpr int kThreadsPerTile = kWarpSize * kWarpsPerTile;
constexpr int kForwardMinBlocksPerSm = FLASHRNN_SCAN_FW_THREADS_PER_SM / kThreadsPerTile;
constexpr int kBackwardMinBlocksPerSm = FLASHRNN_SCAN_BW_THREADS_PER_SM / kThreadsPerTile;
constexpr int kVectorBytes = 16;

struct ThreadShape {
  int steps;     // consecutive steps per thread
  int channels;  // channels per thread
};

// [B, D, T]: 16 steps of one channel (one to four 16-byte vectors per tensor).
// [B, T, D]: 4 channels (one 8- or 16-byte vector) at each of 4 steps. Registers
// bound these: a thread keeps its inputs from load until the final pass.
constexpr ThreadShape thread_shape(bool btd) {
  return btd ? ThreadShape{FLASHRNN_SCAN_BTD_STEPS, 4} : ThreadShape{FLASHRNN_SCAN_BDT_STEPS, 1};
}

// Elements a vector access holds: along time ([B, D, T]) or across channels ([B, T, D]).
constexpr int vector_elements(bool btd, int element_bytes) {
  return btd ? thread_shape(true).channels : kVectorBytes / element_bytes;
}

struct ScanTiling {
  int steps_per_thread = 1;
  int channels_per_thread = 1;
  int slots_per_warp = 1;   // power of two in [1, 32]
  int groups_per_warp = 32;  // 32 / slots_per_warp
  int tile_channels = 1;     // slots_per_warp · channels_per_thread
  int64_t tile_steps = 1;    // kWarpsPerTile · groups_per_warp · steps_per_thread
  int64_t channel_blocks = 1;  // tiles across channels: of one batch row ([B,T,D]) or of all B·D
  int64_t rows = 1;            // tiles across (batch, channels)
  int64_t time_tiles = 1;      // tiles along one chain
  int64_t tiles = 1;           // rows · time_tiles
};

namespace detail {
constexpr int64_t ceil_div(int64_t x, int64_t y) { return (x + y - 1) / y; }
constexpr int floor_pow2(int64_t x) {
  int p = 1;
  while (p * 2 <= x && p < (1 << 30)) p *= 2;
  return p;
}
constexpr int ceil_pow2(int64_t x) {
  int p = 1;
  while (p < x && p < (1 << 30)) p *= 2;
  return p;
}
constexpr int clamp_int(int x, int lo, int hi) { return x < lo ? lo : (x > hi ? hi : x); }
}  // namespace detail

inline ScanTiling make_tiling(const ScanShape& shape) {
  const ThreadShape ts = thread_shape(shape.btd);
  ScanTiling t;
  t.steps_per_thread = ts.steps;
  t.channels_per_thread = ts.channels;
  if (shape.btd) {
    // Enough slots for the row of D channels, so small D does not idle lanes.
    t.slots_per_warp = detail::clamp_int(
        detail::ceil_pow2(detail::ceil_div(shape.channels, ts.channels)), 1, kWarpSize);
  } else {
    // Short sequences put several channels in a warp rather than idle its lanes.
    const int64_t steps_one_slot = int64_t(kWarpsPerTile) * kWarpSize * ts.steps;
    t.slots_per_warp = detail::clamp_int(
        detail::floor_pow2(steps_one_slot / (shape.steps > 0 ? shape.steps : 1)), 1, kWarpSize);
  }
  t.groups_per_warp = kWarpSize / t.slots_per_warp;
  t.tile_channels = t.slots_per_warp * t.channels_per_thread;
  t.tile_steps = int64_t(kWarpsPerTile) * t.groups_per_warp * t.steps_per_thread;
  if (shape.btd) {
    t.channel_blocks = detail::ceil_div(shape.channels, t.tile_channels);
    t.rows = shape.batch * t.channel_blocks;
  } else {
    t.channel_blocks = detail::ceil_div(shape.batch * shape.channels, t.tile_channels);
    t.rows = t.channel_blocks;
  }
  t.time_tiles = detail::ceil_div(shape.steps, t.tile_steps);
  t.tiles = t.rows * t.time_tiles;
  return t;
}

// The look-back's scratch memory in one buffer: a ticket counter and one status
// word per tile (zeroed before each launch), then per tile and tile channel the
// tile's aggregate (a, b) and its inclusive state. Chains of one tile need none.
struct LookbackLayout {
  size_t ticket = 0;
  size_t flags = 0;
  size_t aggregates = 0;
  size_t inclusive = 0;
  size_t zeroed_bytes = 0;  // [0, zeroed_bytes) is cleared before each launch
  size_t total_bytes = 0;
};

inline LookbackLayout lookback_layout(const ScanTiling& t) {
  LookbackLayout l;
  if (t.time_tiles <= 1) return l;
  const auto align16 = [](size_t x) { return (x + 15) / 16 * 16; };
  const size_t tiles = size_t(t.tiles), values = tiles * size_t(t.tile_channels);
  l.ticket = 0;
  l.flags = 16;
  l.zeroed_bytes = align16(l.flags + tiles * sizeof(uint32_t));
  l.aggregates = l.zeroed_bytes;
  l.inclusive = align16(l.aggregates + values * 2 * sizeof(float));
  l.total_bytes = align16(l.inclusive + values * sizeof(float));
  return l;
}

}  // namespace flashrnn::scan_kernels

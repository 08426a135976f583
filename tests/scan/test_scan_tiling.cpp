// The CUDA kernels' tile geometry, checked on the CPU: the threads of all tiles
// own every element exactly once, in scan order, with the right [B, D] index.
#include <gtest/gtest.h>

#include <vector>

#include "scan/tile/scan_thread_map.h"
#include "scan/tile/scan_tiling.h"

namespace flashrnn::scan_kernels {
namespace {

struct Geometry {
  int64_t batch, channels, steps;
  bool btd;
  ScanDtype dtype;
};

ScanShape shape_of(const Geometry& g, bool reverse) {
  ScanShape s;
  s.batch = g.batch;
  s.channels = g.channels;
  s.steps = g.steps;
  s.btd = g.btd;
  s.reverse = reverse;
  s.dtype = g.dtype;
  return s;
}

template <bool kBtd>
void check_coverage(const ScanShape& shape) {
  constexpr ThreadShape ts = thread_shape(kBtd);
  const ScanTiling tiling = make_tiling(shape);
  const int64_t B = shape.batch, D = shape.channels, T = shape.steps;
  std::vector<int> owners(size_t(B * D * T), 0);
  std::vector<int> channel_owners(size_t(B * D), 0);
  for (int64_t tile = 0; tile < tiling.tiles; ++tile) {
    const TilePlace place = place_tile(tiling, tile);
    ASSERT_EQ(place.row + place.time_tile * tiling.rows, tile);  // chains are `rows` apart
    if (place.time_tile == 0)
      for (int c = 0; c < tiling.tile_channels; ++c) {
        const int64_t flat = tile_channel_flat<kBtd>(shape, tiling, place.row, c);
        if (flat >= 0) ++channel_owners[size_t(flat)];
      }
    for (int thread = 0; thread < kThreadsPerTile; ++thread) {
      const LanePlace lane = place_lane<kBtd>(tiling, thread);
      const ThreadElements e = place_elements<kBtd, ts.steps, ts.channels>(
          shape, tiling, lane, place, shape.reverse, false);
      ASSERT_LE(e.channels, ts.channels);
      for (int s = 0; s < ts.steps; ++s) {
        const int64_t u = e.first + s;
        if (u >= T) continue;
        for (int c = 0; c < e.channels; ++c) {
          const int64_t offset = e.offset(u) + (kBtd ? c : 0);
          ASSERT_GE(offset, 0);
          ASSERT_LT(offset, B * D * T);
          ++owners[size_t(offset)];
          // Decode the offset in the layout and compare with what the thread claims.
          const int64_t b = offset / (D * T);
          const int64_t d = kBtd ? offset % D : (offset / T) % D;
          const int64_t t = kBtd ? (offset / D) % T : offset % T;
          ASSERT_EQ(e.flat + c, b * D + d);
          ASSERT_EQ(t, shape.reverse ? T - 1 - u : u);
        }
      }
      // The next time group of the same slot sits group_stride lanes further on.
      if (lane.group + 1 < tiling.groups_per_warp) {
        const LanePlace next = place_lane<kBtd>(tiling, thread + lane.group_stride);
        ASSERT_EQ(next.slot, lane.slot);
        ASSERT_EQ(next.group, lane.group + 1);
      }
    }
  }
  for (size_t i = 0; i < owners.size(); ++i) ASSERT_EQ(owners[i], 1) << "element " << i;
  for (size_t i = 0; i < channel_owners.size(); ++i) ASSERT_EQ(channel_owners[i], 1);
}

TEST(ScanTiling, EveryElementOwnedOnce) {
  const std::vector<Geometry> geometries = {
      {2, 3, 5, false, ScanDtype::kFloat32},     {1, 1, 1, false, ScanDtype::kFloat32},
      {2, 5, 4099, false, ScanDtype::kFloat32},  {3, 7, 100, false, ScanDtype::kBFloat16},
      {1, 2, 9000, false, ScanDtype::kFloat16},  {2, 6, 37, true, ScanDtype::kFloat32},
      {1, 130, 70, true, ScanDtype::kBFloat16},  {2, 16, 300, true, ScanDtype::kFloat32},
      {1, 1, 1000, true, ScanDtype::kFloat16},   {3, 257, 3, true, ScanDtype::kFloat32}};
  for (const Geometry& g : geometries)
    for (bool reverse : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "B=" << g.batch << " D=" << g.channels
                                      << " T=" << g.steps << (g.btd ? " btd" : " bdt")
                                      << (reverse ? " reverse" : ""));
      if (g.btd)
        check_coverage<true>(shape_of(g, reverse));
      else
        check_coverage<false>(shape_of(g, reverse));
    }
}

TEST(ScanTiling, TilesFitTheShape) {
  const int bdt_steps = thread_shape(false).steps, btd = thread_shape(true).channels;
  // [B, T, D]: enough channel slots for D, no more.
  ScanTiling t = make_tiling(shape_of({8, 1536, 4096, true, ScanDtype::kFloat32}, false));
  EXPECT_EQ(t.slots_per_warp, 32);
  EXPECT_EQ(t.tile_channels, 32 * btd);
  EXPECT_EQ(t.channel_blocks * t.tile_channels, 1536);
  EXPECT_EQ(t.time_tiles * t.tile_steps, 4096);
  t = make_tiling(shape_of({1, 16, 1 << 20, true, ScanDtype::kFloat32}, false));
  EXPECT_EQ(t.slots_per_warp, 16 / btd);
  EXPECT_EQ(t.tile_channels, 16);
  // [B, D, T]: one channel per warp for long sequences, several for short ones.
  t = make_tiling(shape_of({8, 1536, 65536, false, ScanDtype::kFloat32}, false));
  EXPECT_EQ(t.slots_per_warp, 1);
  EXPECT_EQ(t.tile_steps, int64_t(kThreadsPerTile) * bdt_steps);
  EXPECT_EQ(t.time_tiles * t.tile_steps, 65536);
  t = make_tiling(shape_of({8, 1536, 100, false, ScanDtype::kFloat32}, false));
  EXPECT_GT(t.slots_per_warp, 1);
  EXPECT_GE(t.tile_steps * t.time_tiles, 100);
  EXPECT_LT(t.tile_steps, 2 * 100);  // no more than twice the sequence
}

TEST(ScanTiling, LookbackWorkspace) {
  const ScanTiling single = make_tiling(shape_of({8, 1536, 64, false, ScanDtype::kFloat32}, false));
  ASSERT_EQ(single.time_tiles, 1);
  EXPECT_EQ(lookback_layout(single).total_bytes, 0u);
  const ScanTiling chained = make_tiling(shape_of({2, 100, 5000, true, ScanDtype::kFloat32}, false));
  ASSERT_GT(chained.time_tiles, 1);
  const LookbackLayout l = lookback_layout(chained);
  const size_t values = size_t(chained.tiles) * size_t(chained.tile_channels);
  EXPECT_GE(l.flags, l.ticket + sizeof(uint32_t));
  EXPECT_GE(l.zeroed_bytes, l.flags + size_t(chained.tiles) * sizeof(uint32_t));
  EXPECT_GE(l.aggregates, l.zeroed_bytes);
  EXPECT_GE(l.inclusive, l.aggregates + values * 2 * sizeof(float));
  EXPECT_GE(l.total_bytes, l.inclusive + values * sizeof(float));
  for (size_t offset : {l.flags, l.aggregates, l.inclusive}) EXPECT_EQ(offset % 16, 0u);
}

}  // namespace
}  // namespace flashrnn::scan_kernels

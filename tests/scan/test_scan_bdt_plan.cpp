// The [B, D, T] warp kernels' plan (scan_bdt_plan.h) and the run-time variant
// syntax (scan_variant.h), checked on the CPU.
#include <gtest/gtest.h>

#include <vector>

#include "scan/scan_variant.h"
#include "scan/warp/scan_bdt_plan.h"

namespace flashrnn::scan_kernels {
namespace {

ScanShape bdt_shape(int64_t batch, int64_t channels, int64_t steps, ScanDtype dtype) {
  ScanShape s;
  s.batch = batch;
  s.channels = channels;
  s.steps = steps;
  s.dtype = dtype;
  return s;
}

TEST(ScanBdtPlan, ManyRowsMarch) {
  const BdtPlan p = make_bdt_plan(bdt_shape(8, 1536, 4096, ScanDtype::kFloat32), {}, 132);
  EXPECT_EQ(p.mode, BdtMode::kMarch);
  EXPECT_EQ(p.vector, 4);
  EXPECT_EQ(p.iteration_steps, 128);
  EXPECT_EQ(p.items, 8 * 1536);
  EXPECT_EQ(p.item_steps, 4096);
  EXPECT_EQ(bdt_lookback_layout(p).total_bytes, 0u);
  const BdtPlan h = make_bdt_plan(bdt_shape(8, 1536, 4096, ScanDtype::kBFloat16), {}, 132);
  EXPECT_EQ(h.vector, 8);
  EXPECT_EQ(h.iteration_steps, 256);
}

TEST(ScanBdtPlan, FewRowsLookBackAndItemsCoverEveryStep) {
  for (const int64_t steps : {int64_t(1) << 20, int64_t(5003), int64_t(4200)})
    for (const int iterations : {8, 16}) {
      BdtChoice choice;
      choice.item_iterations = iterations;
      const BdtPlan p = make_bdt_plan(bdt_shape(1, 16, steps, ScanDtype::kFloat32), choice, 132);
      SCOPED_TRACE(::testing::Message() << "T=" << steps << " items of " << iterations);
      EXPECT_EQ(p.mode, BdtMode::kLookback);
      EXPECT_EQ(p.item_steps, kBdtLookbackWarps * iterations * p.iteration_steps);
      EXPECT_GE(p.chunks * p.item_steps, steps);       // every step in some item
      EXPECT_LT((p.chunks - 1) * p.item_steps, steps);  // no empty item
      EXPECT_EQ(p.items, 16 * p.chunks);
      const BdtLookbackLayout l = bdt_lookback_layout(p);
      EXPECT_GE(l.descriptors, l.ticket + sizeof(uint32_t));
      EXPECT_EQ(l.descriptors % 16, 0u);
      EXPECT_GE(l.total_bytes, l.descriptors + size_t(p.items) * 16);
    }
}

TEST(ScanBdtPlan, ForcedModes) {
  BdtChoice march;
  march.mode = BdtMode::kMarch;
  EXPECT_EQ(make_bdt_plan(bdt_shape(1, 2, 100000, ScanDtype::kFloat16), march, 132).chunks, 1);
  BdtChoice lookback;
  lookback.mode = BdtMode::kLookback;
  const BdtPlan p = make_bdt_plan(bdt_shape(8, 1536, 20000, ScanDtype::kFloat32), lookback, 132);
  EXPECT_EQ(p.mode, BdtMode::kLookback);
  // Items of 2 warps x 16 iterations x 128 fp32 steps: 20000 steps are 5 items, the last partial.
  EXPECT_EQ(p.item_steps, 4096);
  EXPECT_EQ(p.chunks, 5);
  EXPECT_EQ(p.items, 8 * 1536 * 5);
}

// By default many rows march and few rows of several items go to the look-back.
TEST(ScanBdtPlan, AutoMarchesManyRowsAndLooksBackOverFewLongOnes) {
  const BdtChoice auto_choice;
  EXPECT_EQ(make_bdt_plan(bdt_shape(8, 1536, 4096, ScanDtype::kBFloat16), auto_choice, 132).mode,
            BdtMode::kMarch);
  EXPECT_EQ(make_bdt_plan(bdt_shape(1, 16, int64_t(1) << 20, ScanDtype::kFloat32), auto_choice, 132).mode,
            BdtMode::kLookback);
  // One item per row: march, whatever the row count.
  EXPECT_EQ(make_bdt_plan(bdt_shape(1, 5, 300, ScanDtype::kFloat32), auto_choice, 132).mode,
            BdtMode::kMarch);
}

// The shared-memory swizzle of a lookback item: a bijection, and neither the
// coalesced copies nor the transposed reads have bank conflicts (the 8 lanes of
// each quarter-warp land in 8 different 16-byte bank groups).
TEST(ScanBdtPlan, ItemSwizzleIsABijectionWithoutBankConflicts) {
  for (const int iterations : {8, 16}) {
    SCOPED_TRACE(::testing::Message() << "items of " << iterations);
    const int slots = 32 * iterations;
    std::vector<int> seen(slots, 0);
    for (int s = 0; s < slots; ++s) {
      const int p = item_slot_swizzle(s, iterations);
      ASSERT_GE(p, 0);
      ASSERT_LT(p, slots);
      ++seen[p];
    }
    for (int p = 0; p < slots; ++p) EXPECT_EQ(seen[p], 1) << "physical slot " << p;
    const auto conflict_free = [&](auto slot_of_lane, const char* what, int step) {
      for (int quarter = 0; quarter < 4; ++quarter) {
        unsigned groups = 0;
        for (int l = 8 * quarter; l < 8 * quarter + 8; ++l)
          groups |= 1u << (item_slot_swizzle(slot_of_lane(l), iterations) % 8);
        EXPECT_EQ(groups, 0xffu) << what << " " << step << ", quarter-warp " << quarter;
      }
    };
    for (int k = 0; k < iterations; ++k)
      conflict_free([&](int l) { return 32 * k + l; }, "copy of iteration", k);
    for (int m = 0; m < iterations; ++m)
      conflict_free([&](int l) { return l * iterations + m; }, "transposed read of step", m);
  }
}

TEST(ScanVariant, Parses) {
  bool ok = false;
  ScanVariant v = parse_scan_variant("mode=lookback,items=8,depth=2", ok);
  EXPECT_TRUE(ok);
  EXPECT_TRUE(v.bdt_warp);
  EXPECT_EQ(v.bdt.mode, BdtMode::kLookback);
  EXPECT_EQ(v.bdt.item_iterations, 8);
  EXPECT_EQ(v.bdt.depth, 2);
  EXPECT_EQ(describe_scan_variant(v), "bdt=warp,mode=lookback,depth=2,items=8");
  v = parse_scan_variant("bdt=tile", ok);
  EXPECT_TRUE(ok);
  EXPECT_FALSE(v.bdt_warp);
  v = parse_scan_variant("mode=lookback,blocks_per_sm=2", ok);
  EXPECT_TRUE(ok);
  EXPECT_EQ(v.bdt.blocks_per_sm, 2);
  EXPECT_EQ(describe_scan_variant(v), "bdt=warp,mode=lookback,depth=4,items=16,blocks_per_sm=2");
  const BdtPlan p = make_bdt_plan(bdt_shape(1, 16, int64_t(1) << 20, ScanDtype::kFloat32), v.bdt, 132);
  EXPECT_EQ(p.blocks_per_sm, 2);
  EXPECT_EQ(p.item_steps, kBdtLookbackWarps * 16 * 128);
  parse_scan_variant("items=4", ok);
  EXPECT_FALSE(ok);
  parse_scan_variant("blocks_per_sm=12", ok);
  EXPECT_FALSE(ok);
  parse_scan_variant("depth=3", ok);
  EXPECT_FALSE(ok);
  parse_scan_variant("colour=blue", ok);
  EXPECT_FALSE(ok);
}

}  // namespace
}  // namespace flashrnn::scan_kernels

// The fused kernel's tiling: known cases, and every ranked configuration
// checked against the device limits with arithmetic written out here.
#include <gtest/gtest.h>

#include <algorithm>

#include "flashrnn/tune/errors.h"
#include "flashrnn/tune/fused_model.h"
#include "flashrnn/tune/fused_select.h"

namespace flashrnn::tune {
namespace {

// Bytes of R for one head: G gate matrices of D x D.
int64_t r_bytes_per_head(const FusedShape& s) {
  return int64_t(cell_gates(s.cell)) * s.head_dim * s.head_dim * dtype_bytes(s.dtype);
}

// What one SM can hold at most: every register and all shared memory.
int64_t on_chip_bytes(const DeviceProps& d) { return 4 * int64_t(d.regs_per_sm) + d.smem_per_sm; }

TEST(FusedSelect, Lstm12x64FitsOneSmPerHead) {
  const DeviceProps h100 = device_fixture("h100");
  const FusedShape shape{Cell::kLstm, 12, 64, 16, DType::kBf16};
  ASSERT_LT(r_bytes_per_head(shape), on_chip_bytes(h100));
  const FusedSelection s = select_fused_config(h100, Cell::kLstm, 12, 64, 16, DType::kBf16);
  ASSERT_TRUE(s.config) << s.reason;
  EXPECT_EQ(s.config->ctas_per_head, 1);
  EXPECT_EQ(s.config->exchange, HeadExchange::kNone);
  EXPECT_EQ(s.config->ctas, 12 / s.config->heads_per_cta);
  EXPECT_GT(s.feasible, 1u);
  EXPECT_GT(s.cost.step_ns, 0);
  std::printf("h100 lstm 12x64: %s\n  %s\n", describe(*s.config).c_str(), describe(s.cost).c_str());
}

TEST(FusedSelect, Lstm1x768NeedsSeveralCtasPerHead) {
  for (const char* device : {"h100", "h200", "a100"}) {
    SCOPED_TRACE(device);
    const DeviceProps d = device_fixture(device);
    const FusedShape shape{Cell::kLstm, 1, 768, 16, DType::kBf16};
    // 4 · 768 · 768 · 2 bytes = 4.5 MiB, about ten times what one SM holds.
    ASSERT_GT(r_bytes_per_head(shape), on_chip_bytes(d));
    const FusedSelection s = select_fused_config(d, shape);
    ASSERT_TRUE(s.config) << s.reason;
    EXPECT_GT(s.config->ctas_per_head, 1);
    EXPECT_NE(s.config->exchange, HeadExchange::kNone);
    // At least enough CTAs to hold R.
    EXPECT_GE(s.config->ctas_per_head * on_chip_bytes(d), r_bytes_per_head(shape));
    if (!d.has_clusters()) {
      EXPECT_EQ(s.config->exchange, HeadExchange::kGrid);
    }

    // One CTA per head is ruled out before search, and the reason names the
    // constraint that keeps R on chip.
    FusedTilingModel one_cta(d, shape);
    ASSERT_TRUE(one_cta.fix("ctas_per_head", 1));
    const SolveResult r = solve_all(one_cta.problem());
    ASSERT_TRUE(r.conflict);
    EXPECT_TRUE(r.conflict->before_search);
    EXPECT_NE(explain(one_cta.problem(), *r.conflict).find("'r_on_chip'"), std::string::npos)
        << explain(one_cta.problem(), *r.conflict);
  }
}

TEST(FusedSelect, UnsupportedShapesFallBackWithAReason) {
  const DeviceProps h100 = device_fixture("h100");
  // Not a whole number of 16-wide mma tiles.
  FusedSelection s = select_fused_config(h100, Cell::kGru, 2, 72, 16, DType::kBf16);
  EXPECT_FALSE(s.config);
  EXPECT_NE(s.reason.find("'head_dim_mma'"), std::string::npos) << s.reason;
  EXPECT_NE(s.reason.find("gru 2x72"), std::string::npos) << s.reason;
  // R of one fp32 head of 4096 is 256 MiB: no split of at most 64 CTAs holds it.
  s = select_fused_config(h100, Cell::kLstm, 1, 4096, 16, DType::kFp32);
  EXPECT_FALSE(s.config);
  EXPECT_NE(s.reason.find("'r_on_chip'"), std::string::npos) << s.reason;
  EXPECT_THROW(select_fused_config(h100, Cell::kLstm, 0, 64, 16, DType::kBf16), ProblemError);
}

// Every configuration of every case, checked with the arithmetic of the
// kernel's layout (README.md) rather than with the model's constraints.
TEST(FusedSelect, EveryRankedConfigurationRespectsTheDevice) {
  size_t checked = 0;
  for (const std::string& name : device_fixture_names()) {
    const DeviceProps d = device_fixture(name);
    for (Cell cell : {Cell::kLstm, Cell::kSlstm, Cell::kGru, Cell::kElman})
      for (DType dtype : {DType::kBf16, DType::kFp32})
        for (auto [heads, head_dim, batch] :
             {std::tuple{12, 64, 16}, {3, 256, 16}, {1, 768, 16}, {4, 128, 40}, {8, 32, 100}}) {
          const FusedShape s{cell, heads, head_dim, batch, dtype};
          SCOPED_TRACE(name + " " + describe(s));
          const FusedRanking ranking = rank_fused_configs(d, s);
          const int G = cell_gates(cell), eb = dtype_bytes(dtype);
          for (size_t i = 0; i < ranking.configs.size(); ++i) {
            const FusedConfig& c = ranking.configs[i].config;
            if (i > 0) {
              ASSERT_LE(ranking.configs[i - 1].cost.step_cycles, ranking.configs[i].cost.step_cycles);
            }
            // Heads and batch onto CTAs.
            ASSERT_EQ(c.ctas_per_head * c.units_per_cta, head_dim);
            ASSERT_EQ(heads % c.heads_per_cta, 0);
            ASSERT_TRUE(c.heads_per_cta == 1 || c.ctas_per_head == 1);
            ASSERT_EQ(c.exchange == HeadExchange::kNone, c.ctas_per_head == 1);
            if (c.exchange == HeadExchange::kCluster) {
              ASSERT_LE(c.ctas_per_head, d.max_cluster_size_nonportable);
            }
            if (c.exchange == HeadExchange::kGrid) {
              ASSERT_LE(c.ctas, d.sm_count);
            }
            ASSERT_GE(c.batch_tiles * c.batch_tile, batch);
            ASSERT_LT((c.batch_tiles - 1) * c.batch_tile, batch);
            ASSERT_EQ(c.ctas, heads / c.heads_per_cta * c.ctas_per_head * c.batch_tiles);
            // Warps and mma tiles.
            ASSERT_EQ((G * c.units_per_warp) % 16, 0);
            ASSERT_EQ(c.units_per_cta % c.units_per_warp, 0);
            ASSERT_EQ(c.warps, c.heads_per_cta * (c.units_per_cta / c.units_per_warp) * c.k_split);
            ASSERT_EQ(c.threads, 32 * c.warps);
            ASSERT_LE(c.threads, d.max_threads_per_block);
            ASSERT_EQ(c.k_slice * c.k_split, head_dim);
            ASSERT_EQ(c.k_reg % 16, 0);
            ASSERT_EQ(c.k_reg + c.k_smem, c.k_slice);
            // All of the CTA's R is on chip: registers of all warps plus shared memory.
            const int64_t r_in_registers = int64_t(c.warps) * G * c.units_per_warp * c.k_reg * eb;
            ASSERT_EQ(r_in_registers + c.smem_r,
                      int64_t(c.heads_per_cta) * G * c.units_per_cta * head_dim * eb);
            // Registers.
            ASSERT_LE(c.regs_needed, d.regs_per_thread);
            ASSERT_EQ(c.regs_alloc % 8, 0);
            ASSERT_GE(c.regs_alloc, c.regs_needed);
            ASSERT_LT(c.regs_alloc, c.regs_needed + 8);
            ASSERT_LE(int64_t(c.regs_alloc) * c.threads, d.regs_per_block);
            ASSERT_GE(int64_t(c.regs_needed - 40) * 4 * 32, int64_t(G) * c.units_per_warp * c.k_reg * eb);
            // Shared memory.
            ASSERT_EQ(c.smem_bytes, c.smem_r + c.smem_h + c.smem_wx + c.smem_reduce);
            ASSERT_LE(c.smem_bytes, d.smem_per_block_optin);
            ASSERT_EQ(c.smem_h, 2LL * c.heads_per_cta * head_dim * c.batch_tile * eb);
            ++checked;
          }
        }
  }
  EXPECT_GT(checked, 10000u);
  std::printf("checked %zu configurations\n", checked);
}

TEST(FusedSelect, ClustersOnlyWhereTheDeviceHasThem) {
  const FusedShape shape{Cell::kSlstm, 3, 256, 16, DType::kBf16};
  for (const char* device : {"a100", "l4"}) {
    const FusedRanking r = rank_fused_configs(device_fixture(device), shape);
    for (const RankedConfig& c : r.configs) ASSERT_NE(c.config.exchange, HeadExchange::kCluster);
  }
  const FusedRanking h100 = rank_fused_configs(device_fixture("h100"), shape);
  EXPECT_TRUE(std::any_of(h100.configs.begin(), h100.configs.end(), [](const RankedConfig& c) {
    return c.config.exchange == HeadExchange::kCluster;
  }));
}

TEST(FusedSelect, CachedDecisionsGiveTheSameConfigurationBack) {
  const DeviceProps h200 = device_fixture("h200");
  const FusedShape shape{Cell::kLstm, 3, 256, 16, DType::kBf16};
  const FusedSelection s = select_fused_config(h200, shape);
  ASSERT_TRUE(s.config);
  const auto again = fused_config_with(h200, shape, decisions_of(*s.config));
  ASSERT_TRUE(again);
  EXPECT_EQ(describe(*again), describe(*s.config));
  EXPECT_EQ(again->smem_bytes, s.config->smem_bytes);
  // The same decisions on a device without clusters do not fit.
  if (s.config->exchange == HeadExchange::kCluster) {
    EXPECT_FALSE(fused_config_with(device_fixture("a100"), shape, decisions_of(*s.config)));
  }
  // A value outside the model's domain is not an error, just no fit.
  FusedDecisions odd = decisions_of(*s.config);
  odd.k_split = 3;
  EXPECT_FALSE(fused_config_with(h200, shape, odd));
}

TEST(FusedSelect, AnEditedModelIsUsedAndItsMistakesReported) {
  const DeviceProps h100 = device_fixture("h100");
  const FusedShape shape{Cell::kLstm, 12, 64, 16, DType::kBf16};
  std::string text(fused_tiling_model_text());
  // Forbid registers for R: every configuration must keep R in shared memory.
  text += "\nno_registers: k_reg == 0\n";
  const FusedRanking r = rank_fused_configs(h100, shape, text);
  ASSERT_FALSE(r.configs.empty());
  for (const RankedConfig& c : r.configs) ASSERT_EQ(c.config.k_reg, 0);
  // A model without a variable the tuner reads is rejected by name.
  std::string broken(fused_tiling_model_text());
  broken.replace(broken.find("var k_split"), 11, "var k_splat");
  try {
    rank_fused_configs(h100, shape, broken);
    FAIL();
  } catch (const ProblemError& e) {
    EXPECT_NE(std::string(e.what()).find("k_split"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace flashrnn::tune

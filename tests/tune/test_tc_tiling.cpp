// The tensor-core kernels' tiling model (models/tc_tiling.txt) against the
// kernels themselves: every number the tuner computes must equal the
// constexprs the kernels are compiled with (flashrnn_ops/src/fused/tc_tiling.h),
// for every compiled head dim, cell and storage size, on every device fixture.
// The fused backend decides with the tuner but launches with the constexprs,
// so this test is what keeps the two the same.
#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>
#include <set>
#include <string>
#include <type_traits>
#include <utility>

#include "cells/elman.h"
#include "cells/gru.h"
#include "cells/lstm.h"
#include "cells/slstm.h"
#include "flashrnn/tune/device_props.h"
#include "flashrnn/tune/tc_model.h"
#include "flashrnn/tune/tc_select.h"
#include "fused/tc_tiling.h"

namespace flashrnn::tune {
namespace {

using fused::kTcHeadDims;
using fused::kTcRows;
using fused::kTcSmemBudget;
using fused::TcBackward;
using fused::TcForward;
using fused::TcTiling;

// A 2-byte storage element: the layouts only use sizeof(S).
struct Half16 {
  uint16_t bits;
};
static_assert(sizeof(Half16) == 2);

template <class C>
constexpr Cell tuner_cell() {
  if constexpr (std::is_same_v<C, cells::Lstm>) return Cell::kLstm;
  if constexpr (std::is_same_v<C, cells::Slstm>) return Cell::kSlstm;
  if constexpr (std::is_same_v<C, cells::Gru>) return Cell::kGru;
  return Cell::kElman;
}

// Whether fused/instances/ compiles a (gates, head dim) case: TcTiling::kCompiled
// for any head dim, computed at run time (check_case ties the two together).
bool kernel_compiled(int gates, int head_dim) {
  const int groups = gates % 2 == 0 ? 1 : 2;
  return fused::tc_cluster_size(gates, head_dim) > 0 &&
         gates * groups * head_dim / 8 <= fused::kTcMaxRRegisters;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// One (cell, head dim) case on one device, checked field by field.
template <class C, int D>
void check_case(const DeviceProps& device, DType dtype) {
  using T = TcTiling<C::kGates, D>;
  using Fw = TcForward<C, Half16, D>;
  using Bw = TcBackward<C, Half16, D>;
  const Cell cell = tuner_cell<C>();
  SCOPED_TRACE(std::string(to_string(cell)) + " D=" + std::to_string(D) + " " +
               std::string(to_string(dtype)) + " on " + device.name);

  // The cell's constants the model takes.
  EXPECT_EQ(cell_gates(cell), C::kGates);
  EXPECT_EQ(cell_states(cell), C::kStates);
  EXPECT_EQ(cell_cache(cell), C::kCache);
  EXPECT_EQ(kernel_compiled(C::kGates, D), T::kCompiled);
  // Every compiled head dim splits (kTcHeadDims lists no 176 or 208).
  ASSERT_GE(T::kCluster, 1);

  const FusedShape shape{cell, 3, D, 40, dtype};
  const TcSelection s = select_tc_config(device, shape);
  const bool clusters = T::kCluster <= device.max_cluster_size;
  const bool fits = Fw::smem_bytes() <= device.smem_per_block_optin &&
                    Bw::smem_bytes() <= device.smem_per_block_optin;
  const bool runs = T::kCompiled && clusters && fits;
  ASSERT_EQ(bool(s.config), runs) << s.reason;
  // The tiling is fixed at compile time: the model has exactly one solution
  // where it runs (the cluster too: the fewest CTAs, not merely one that fits).
  EXPECT_EQ(solve_all(TcTilingModel(device, shape).problem()).solutions.size(), runs ? 1u : 0u);
  // Where it does not, the numbers come from the lifted model, and the binding
  // constraint is the first the model lists: the cluster, R's cap, shared memory.
  ASSERT_TRUE(runs || s.needs) << s.reason;
  const TcConfig& c = runs ? *s.config : *s.needs;
  if (!runs) {
    if (!clusters) {
      EXPECT_EQ(s.binding, "cluster_fits");
      EXPECT_TRUE(contains(s.reason, "head dim " + std::to_string(D) +
                                         " needs a thread-block cluster of " +
                                         std::to_string(T::kCluster) + " CTAs (sm_90)"))
          << s.reason;
    } else if (!T::kCompiled) {
      EXPECT_EQ(s.binding, "r_regs_cap");
      EXPECT_TRUE(contains(s.reason, "R takes " + std::to_string(T::kRRegisters) +
                                         " registers per thread"))
          << s.reason;
      EXPECT_TRUE(contains(s.reason, "> " + std::to_string(fused::kTcMaxRRegisters))) << s.reason;
    } else {
      EXPECT_EQ(s.binding, Fw::smem_bytes() > device.smem_per_block_optin ? "fw_smem_fits"
                                                                          : "bw_smem_fits");
      EXPECT_TRUE(contains(s.reason, std::to_string(device.smem_per_block_optin))) << s.reason;
    }
  }

  EXPECT_EQ(c.rows, kTcRows);
  EXPECT_EQ(c.cluster, T::kCluster);
  EXPECT_EQ(c.cta_dims, T::kCtaDims);
  EXPECT_EQ(c.cta_dims, Fw::kCtaDims);
  EXPECT_EQ(c.d_groups_per_warp, T::kDGroupsPerWarp);
  EXPECT_EQ(c.warps, T::kWarps);
  EXPECT_EQ(c.threads, T::kThreads);
  EXPECT_EQ(c.batch_tiles, 3);              // ceil(40 / 16)
  EXPECT_EQ(c.ctas, 9 * T::kCluster);       // 3 heads x 3 tiles x the cluster (the grid's x · y)
  // R's registers: the forward's r_frag[NG][G][D/16][2] and the backward's
  // r_frag[NG][G·D/16][2], 32-bit each, kRRegisters, and G·D·D·2 bytes of one
  // head over the cluster's threads.
  const int ng = T::kDGroupsPerWarp;
  EXPECT_EQ(c.r_registers_per_thread, T::kRRegisters);
  EXPECT_EQ(c.r_registers_per_thread, ng * C::kGates * (D / 16) * 2);
  EXPECT_EQ(c.r_registers_per_thread, ng * (C::kGates * D / 16) * 2);
  EXPECT_EQ(int64_t(c.r_registers_per_thread) * 4 * T::kThreads * T::kCluster,
            int64_t(C::kGates) * D * D * 2);

  EXPECT_EQ(c.forward_smem_bytes, Fw::smem_bytes());
  EXPECT_EQ(c.backward_smem_bytes, Bw::smem_bytes());
  EXPECT_EQ(c.backward_prefetch, Bw::kPrefetch);
  EXPECT_EQ(c.backward_stages, Bw::kStages);
  EXPECT_EQ(c.backward_stage_bytes, Bw::stage_bytes());
}

// Every compiled head dim, kTcHeadDims[I...].
template <class C, size_t... I>
void check_cell(const DeviceProps& device, DType dtype, std::index_sequence<I...>) {
  (check_case<C, kTcHeadDims[I]>(device, dtype), ...);
}

template <class C>
void check_cell(const DeviceProps& device, DType dtype) {
  check_cell<C>(device, dtype, std::make_index_sequence<std::size(kTcHeadDims)>{});
}

TEST(TcTiling, EveryCompiledCaseMatchesTheKernelsConstexprs) {
  for (const std::string& name : device_fixture_names())
    for (DType dtype : {DType::kBf16, DType::kFp16}) {
      const DeviceProps device = device_fixture(name);
      check_cell<cells::Lstm>(device, dtype);
      check_cell<cells::Slstm>(device, dtype);
      check_cell<cells::Gru>(device, dtype);
      check_cell<cells::Elman>(device, dtype);
    }
}

TEST(TcTiling, TheModelsConstantsAreTheKernels) {
  const TcTilingModel model(device_fixture("h200"), FusedShape{});
  const Problem& p = model.problem();
  auto value = [&](const char* name) { return p.variables()[p.index_of(name)].domain.min(); };
  EXPECT_EQ(value("rows"), kTcRows);
  EXPECT_EQ(value("smem_budget"), kTcSmemBudget);
  EXPECT_EQ(value("fw_prefetch"), (TcForward<cells::Lstm, Half16, 64>::kPrefetch));
  EXPECT_EQ(value("max_split_warps"), fused::kTcMaxCtaWarps);
  EXPECT_EQ(value("max_r_regs"), fused::kTcMaxRRegisters);
  EXPECT_EQ(value("max_cluster"), device_fixture("h200").max_cluster_size);
  const Domain& cluster = p.variables()[p.index_of("cluster")].domain;
  EXPECT_EQ(cluster.min(), 1);
  EXPECT_EQ(cluster.max(), fused::kTcMaxCluster);
  // The compiled head dims are kTcHeadDims, no more, no fewer.
  const Domain& compiled = p.variables()[p.index_of("compiled_head_dim")].domain;
  std::set<int64_t> model_dims, kernel_dims(std::begin(kTcHeadDims), std::end(kTcHeadDims));
  for (uint64_t i = 0; i < compiled.size(); ++i) model_dims.insert(compiled.value_at(i));
  EXPECT_EQ(model_dims, kernel_dims);
  // Every multiple of 16 up to 1024, every cell: the model's cluster is
  // tc_cluster_size (the fewest CTAs, with the limits lifted, so that no device
  // limit hides a wrong one), and the H200 runs exactly the compiled cases.
  const DeviceProps h200 = device_fixture("h200");
  for (Cell cell : {Cell::kLstm, Cell::kSlstm, Cell::kGru, Cell::kElman})
    for (int d = 16; d <= 1024; d += 16) {
      SCOPED_TRACE(std::string(to_string(cell)) + " D=" + std::to_string(d));
      const int gates = cell_gates(cell), kernel_cluster = fused::tc_cluster_size(gates, d);
      const FusedShape shape{cell, 1, d, 16, DType::kBf16};
      TcTilingModel lifted(h200, shape);
      lifted.lift_limits();
      const SolveResult unlimited = solve_all(lifted.problem());
      ASSERT_EQ(unlimited.solutions.size(), kernel_cluster > 0 ? 1u : 0u);
      if (kernel_cluster > 0) {
        const TcConfig needs = lifted.config(unlimited.solutions.front());
        EXPECT_EQ(needs.cluster, kernel_cluster);
        EXPECT_EQ(needs.cta_dims * needs.cluster, d);
      }
      const bool compiled = fused::tc_head_dim_compiled(d) && kernel_compiled(gates, d);
      if (cell == Cell::kElman) {
        EXPECT_EQ(compiled, fused::tc_head_dim_compiled(d));
      }
      const TcSelection s = select_tc_config(h200, shape);
      EXPECT_EQ(s.config.has_value(), compiled) << s.reason;
      if (s.config) continue;
      // Why not, in words: never the solver's raw conflict.
      EXPECT_FALSE(s.binding.empty());
      EXPECT_FALSE(contains(s.reason, "constraint '")) << s.binding << ": " << s.reason;
      if (kernel_cluster == 0) {
        EXPECT_TRUE(contains(s.reason, "has no cluster split")) << s.reason;
        EXPECT_FALSE(s.needs);
      }
    }
}

// Worked by hand from tc_tiling.h's formulas.
TEST(TcTiling, HandCheckedSelections) {
  const DeviceProps h200 = device_fixture("h200");
  // LSTM 12x64 bf16, batch 16: one CTA per head, 64 / 8 = 8 warps, 256 threads;
  // R 4·64·64·2 / (4·256) = 32.
  // Forward: (5 stages · 16 · (4·64 + 8) + 2 · 16 · (64 + 8)) · 2 = 46848 B.
  // Backward stage: 16 · (((4 + 2)·64 + 4) · 4 + (2·64 + 8) · 2) = 29184 B; delta tiles
  // 2 · 16 · (4·64 + 8) · 2 = 16896 B; 4 stages fit 227 KiB: 4 · 29184 + 16896 = 133632 B.
  TcSelection s = select_tc_config(h200, FusedShape{Cell::kLstm, 12, 64, 16, DType::kBf16});
  ASSERT_TRUE(s.config) << s.reason;
  EXPECT_EQ(s.config->cluster, 1);
  EXPECT_EQ(s.config->cta_dims, 64);
  EXPECT_EQ(s.config->warps, 8);
  EXPECT_EQ(s.config->threads, 256);
  EXPECT_EQ(s.config->d_groups_per_warp, 1);
  EXPECT_EQ(s.config->ctas, 12);
  EXPECT_EQ(s.config->r_registers_per_thread, 32);
  EXPECT_EQ(s.config->register_cap, 255);
  EXPECT_EQ(s.config->forward_smem_bytes, 46848);
  EXPECT_EQ(s.config->backward_smem_bytes, 133632);
  EXPECT_EQ(s.config->backward_prefetch, 3);
  EXPECT_FALSE(s.config->may_spill());
  EXPECT_FALSE(contains(describe(*s.config), "cluster")) << describe(*s.config);

  // LSTM 6x128: 128 / 8 = 16 warps, more than a CTA's 8: a cluster of 2 CTAs
  // of 8 warps (256 threads, 64 dims each), so registers are not capped below
  // 255 (one CTA of 512 threads would cap them at 128); R 4·128/8 = 64.
  // Forward (5 · 16 · (4·64 + 8) + 2 · 16 · (128 + 8)) · 2 = 50944 B. Backward
  // stage 16 · ((6·64 + 4) · 4 + (2·64 + 8) · 2) = 29184 B, delta tiles
  // 2 · 16 · (4·128 + 8) · 2 = 33280 B: four stages 116736 + 33280 = 150016 B.
  s = select_tc_config(h200, FusedShape{Cell::kLstm, 6, 128, 16, DType::kBf16});
  ASSERT_TRUE(s.config) << s.reason;
  EXPECT_EQ(s.config->cluster, 2);
  EXPECT_EQ(s.config->cta_dims, 64);
  EXPECT_EQ(s.config->threads, 256);
  EXPECT_EQ(s.config->ctas, 12);
  EXPECT_EQ(s.config->r_registers_per_thread, 64);
  EXPECT_EQ(s.config->register_cap, 255);
  EXPECT_EQ(s.config->forward_smem_bytes, 50944);
  EXPECT_EQ(s.config->backward_smem_bytes, 150016);
  EXPECT_EQ(s.config->backward_prefetch, 3);
  EXPECT_FALSE(s.config->may_spill());

  // GRU (3 gates, odd) 128: two groups of 8 dims per warp, 128 / 16 = 8 warps;
  // R 3·128·128·2 / (4·256) = 96 registers; batch 33 takes 3 tiles.
  s = select_tc_config(h200, FusedShape{Cell::kGru, 2, 128, 33, DType::kFp16});
  ASSERT_TRUE(s.config) << s.reason;
  EXPECT_EQ(s.config->cluster, 1);
  EXPECT_EQ(s.config->d_groups_per_warp, 2);
  EXPECT_EQ(s.config->warps, 8);
  EXPECT_EQ(s.config->threads, 256);
  EXPECT_EQ(s.config->r_registers_per_thread, 96);
  EXPECT_EQ(s.config->ctas, 6);

  // LSTM 3x256: 256 / 8 = 32 warps; 2 CTAs would take 16 each, 3 do not divide
  // 32, so a cluster of 4 CTAs of 8 warps (256 threads), 64 dims each. R
  // 4·256·256·2 / (4 · 256 · 4) = 128 = 4·1·256/8 registers, at the cap. Grid
  // 3 heads x 1 tile x 4 = 12 CTAs.
  // Forward: Wx stages of the CTA's 64 dims, h tiles of the whole head:
  //   (5 · 16 · (4·64 + 8) + 2 · 16 · (256 + 8)) · 2 = (21120 + 8448) · 2 = 59136 B.
  // Backward stage (the CTA's 64 dims): 16 · ((6·64 + 4) · 4 + (2·64 + 8) · 2)
  //   = 16 · (1552 + 272) = 29184 B; delta tiles (the whole head)
  //   2 · 16 · (4·256 + 8) · 2 = 66048 B; four stages 116736 + 66048 = 182784 B
  //   <= 232448, so prefetch 3, 182784 B.
  s = select_tc_config(h200, FusedShape{Cell::kLstm, 3, 256, 16, DType::kBf16});
  ASSERT_TRUE(s.config) << s.reason;
  EXPECT_EQ(s.config->cluster, 4);
  EXPECT_EQ(s.config->cta_dims, 64);
  EXPECT_EQ(s.config->warps, 8);
  EXPECT_EQ(s.config->threads, 256);
  EXPECT_EQ(s.config->r_registers_per_thread, 128);
  EXPECT_EQ(s.config->working_registers, 60);
  EXPECT_EQ(s.config->register_cap, 255);
  EXPECT_EQ(s.config->batch_tiles, 1);
  EXPECT_EQ(s.config->ctas, 12);
  EXPECT_EQ(s.config->forward_smem_bytes, 59136);
  EXPECT_EQ(s.config->backward_stage_bytes, 29184);
  EXPECT_EQ(s.config->backward_smem_bytes, 182784);
  EXPECT_EQ(s.config->backward_prefetch, 3);
  EXPECT_TRUE(contains(describe(*s.config), "4 CTAs per head (cluster, 64 dims each)"))
      << describe(*s.config);

  // LSTM 192: 24 warps; 2 CTAs of 12 are too many warps, 3 of 8 fit: cluster 3,
  // 64 dims each; R 4·192/8 = 96. Forward (5 · 16 · 264 + 2 · 16 · 200) · 2 =
  // 55040 B; backward 4 · 29184 + 2 · 16 · (4·192 + 8) · 2 = 116736 + 49664 = 166400 B.
  s = select_tc_config(h200, FusedShape{Cell::kLstm, 1, 192, 16, DType::kBf16});
  ASSERT_TRUE(s.config) << s.reason;
  EXPECT_EQ(s.config->cluster, 3);
  EXPECT_EQ(s.config->cta_dims, 64);
  EXPECT_EQ(s.config->threads, 256);
  EXPECT_EQ(s.config->r_registers_per_thread, 96);
  EXPECT_EQ(s.config->ctas, 3);
  EXPECT_EQ(s.config->forward_smem_bytes, 55040);
  EXPECT_EQ(s.config->backward_smem_bytes, 166400);

  // Elman 256 (1 gate, odd: 2 groups of 8 per warp): 256 / 16 = 16 warps, 2 CTAs
  // of 8 (128 dims, 256 threads); R 1·2·256/8 = 64. Forward
  // (5 · 16 · (128 + 8) + 2 · 16 · 264) · 2 = 38656 B; backward stage
  // 16 · ((2·128 + 4) · 4 + (128 + 8) · 2) = 20992 B, delta tiles 2 · 16 · 264 · 2
  // = 16896 B, four stages 83968 + 16896 = 100864 B.
  s = select_tc_config(h200, FusedShape{Cell::kElman, 1, 256, 16, DType::kBf16});
  ASSERT_TRUE(s.config) << s.reason;
  EXPECT_EQ(s.config->cluster, 2);
  EXPECT_EQ(s.config->cta_dims, 128);
  EXPECT_EQ(s.config->d_groups_per_warp, 2);
  EXPECT_EQ(s.config->warps, 8);
  EXPECT_EQ(s.config->threads, 256);
  EXPECT_EQ(s.config->r_registers_per_thread, 64);
  EXPECT_EQ(s.config->ctas, 2);
  EXPECT_EQ(s.config->forward_smem_bytes, 38656);
  EXPECT_EQ(s.config->backward_smem_bytes, 100864);
}

TEST(TcTiling, InfeasibleCasesSayWhich) {
  const DeviceProps h200 = device_fixture("h200");
  // GRU 256: a cluster of 2 CTAs of 8 warps would do, but R takes 3 gates · 2
  // groups · 256 / 8 = 192 registers per thread > 128: not compiled (kCompiled).
  TcSelection s = select_tc_config(h200, FusedShape{Cell::kGru, 3, 256, 16, DType::kBf16});
  ASSERT_FALSE(s.config);
  EXPECT_EQ(s.binding, "r_regs_cap");
  EXPECT_TRUE(contains(s.reason,
                       "R takes 192 registers per thread (3 gates · 2 groups · 256 / 8) > 128"))
      << s.reason;
  ASSERT_TRUE(s.needs);
  EXPECT_EQ(s.needs->cluster, 2);
  EXPECT_EQ(s.needs->threads, 256);
  EXPECT_EQ(s.needs->r_registers_per_thread, 192);
  // And R + 68 working registers = 260 > 255.
  EXPECT_GE(s.broken.size(), 2u);

  // LSTM 768: 96 warps of 8 dims; 8 CTAs of at most 8 warps take 64: no cluster.
  s = select_tc_config(h200, FusedShape{Cell::kLstm, 1, 768, 16, DType::kBf16});
  ASSERT_FALSE(s.config);
  EXPECT_EQ(s.binding, "split_warps");
  EXPECT_TRUE(contains(s.reason, "head dim 768 has no cluster split: its 768 / 8 = 96 warps do not "
                                 "divide evenly into 2 to 8 CTAs of at most 8 warps each"))
      << s.reason;
  EXPECT_FALSE(s.needs);
  // Also R (4·768/8 = 384 registers) and not compiled.
  ASSERT_EQ(s.broken.size(), 3u);
  EXPECT_TRUE(contains(s.broken[1], "R takes 384 registers per thread")) << s.broken[1];
  EXPECT_TRUE(contains(s.broken[2], "head dim 768 is not compiled")) << s.broken[2];

  // 176 and 208: 22 and 26 warps of 8 (11 and 13 of 16 at an odd gate count)
  // divide into no 2 to 8 CTAs of at most 8.
  for (Cell cell : {Cell::kLstm, Cell::kGru})
    for (int d : {176, 208}) {
      s = select_tc_config(h200, cell, d, 16, DType::kBf16);
      ASSERT_FALSE(s.config);
      EXPECT_EQ(s.binding, "split_even");
      EXPECT_TRUE(contains(s.reason, "head dim " + std::to_string(d) + " has no cluster split"))
          << s.reason;
    }

  // Elman 288 fits every limit (a cluster of 3, R 72), but no kernel is compiled for it.
  s = select_tc_config(h200, Cell::kElman, 288, 16, DType::kBf16);
  EXPECT_EQ(s.binding, "head_dim_compiled");
  EXPECT_TRUE(contains(s.reason, "head dim 288 is not compiled (the tensor-core kernels have 16, "
                                 "32, 48, 64, 80, 96, 112, 128, 144, 160, 192, 224, 240, 256)"))
      << s.reason;
  ASSERT_TRUE(s.needs);
  EXPECT_EQ(s.needs->cluster, 3);
  s = select_tc_config(h200, Cell::kGru, 72, 16, DType::kBf16);
  EXPECT_EQ(s.binding, "head_dim_mma");
  s = select_tc_config(h200, Cell::kLstm, 64, 16, DType::kFp32);
  EXPECT_EQ(s.binding, "tensor_core_storage");
  EXPECT_TRUE(contains(s.reason, "not fp32")) << s.reason;
}

TEST(TcTiling, DevicesWithoutClustersRunWholeHeadsOnly) {
  const DeviceProps a100 = device_fixture("a100");
  ASSERT_EQ(a100.max_cluster_size, 1);
  // LSTM 256 takes a cluster of 4 (sm_90).
  TcSelection s = select_tc_config(a100, Cell::kLstm, 256, 16, DType::kBf16);
  ASSERT_FALSE(s.config);
  EXPECT_EQ(s.binding, "cluster_fits");
  EXPECT_TRUE(contains(s.reason, "head dim 256 needs a thread-block cluster of 4 CTAs (sm_90); "
                                 "this device has none"))
      << s.reason;
  ASSERT_TRUE(s.needs);  // with the cluster lifted: what the H200 runs
  EXPECT_EQ(s.needs->cluster, 4);
  EXPECT_EQ(s.needs->backward_smem_bytes, 182784);
  // Elman 144: 9 warps of 16 dims, a cluster of 3.
  s = select_tc_config(a100, Cell::kElman, 144, 16, DType::kBf16);
  ASSERT_FALSE(s.config);
  EXPECT_EQ(s.binding, "cluster_fits");
  EXPECT_TRUE(contains(s.reason, "a thread-block cluster of 3 CTAs")) << s.reason;
  // Heads of at most 8 warps run there as before.
  EXPECT_TRUE(select_tc_config(a100, Cell::kElman, 128, 16, DType::kBf16).config);
  EXPECT_TRUE(select_tc_config(a100, Cell::kLstm, 64, 16, DType::kBf16).config);
  // LSTM 96: 12 warps, a cluster of 2.
  s = select_tc_config(a100, Cell::kLstm, 96, 16, DType::kBf16);
  EXPECT_EQ(s.binding, "cluster_fits");
}

TEST(TcTiling, A100RejectsWhatDoesNotFitItsSharedMemory) {
  const DeviceProps a100 = device_fixture("a100");
  ASSERT_EQ(a100.smem_per_block_optin, 163 * 1024);
  // GRU 128 (8 warps, one CTA): the backward's 207360 B (laid out for 227 KiB)
  // exceed 166912 B; and sLSTM 64: four stages of
  // 16 · ((9·64 + 4) · 4 + (4·64 + 8) · 2) = 45568 B + 16896 B = 199168 B.
  TcSelection s = select_tc_config(a100, Cell::kGru, 128, 16, DType::kBf16);
  ASSERT_FALSE(s.config);
  EXPECT_EQ(s.binding, "bw_smem_fits");
  EXPECT_TRUE(contains(s.reason, "the backward needs 207360 B")) << s.reason;
  EXPECT_TRUE(contains(s.reason, "166912 B")) << s.reason;
  s = select_tc_config(a100, Cell::kSlstm, 64, 16, DType::kFp16);
  EXPECT_FALSE(s.config);
  EXPECT_TRUE(contains(s.reason, "the backward needs 199168 B")) << s.reason;
  // What fits runs: Elman 128 (92672 B), LSTM 64 (133632 B), GRU 64 (104960 B).
  EXPECT_TRUE(select_tc_config(a100, Cell::kElman, 128, 16, DType::kBf16).config);
  EXPECT_TRUE(select_tc_config(a100, Cell::kLstm, 64, 16, DType::kBf16).config);
  EXPECT_TRUE(select_tc_config(a100, Cell::kGru, 64, 16, DType::kBf16).config);
}

}  // namespace
}  // namespace flashrnn::tune

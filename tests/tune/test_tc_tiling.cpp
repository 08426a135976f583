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

  const FusedShape shape{cell, 3, D, 40, dtype};
  const TcSelection s = select_tc_config(device, shape);
  const bool fits = Fw::smem_bytes() <= device.smem_per_block_optin &&
                    Bw::smem_bytes() <= device.smem_per_block_optin;
  ASSERT_EQ(bool(s.config), fits) << s.reason;
  // The tiling is fixed at compile time: the model has exactly one solution where it fits.
  EXPECT_EQ(solve_all(TcTilingModel(device, shape).problem()).solutions.size(), fits ? 1u : 0u);
  // Where the device is too small, the numbers come from the lifted model.
  const TcConfig& c = fits ? *s.config : *s.needs;
  if (!fits) {
    EXPECT_EQ(s.binding, Fw::smem_bytes() > device.smem_per_block_optin ? "fw_smem_fits"
                                                                        : "bw_smem_fits");
    EXPECT_NE(s.reason.find(std::to_string(device.smem_per_block_optin)), std::string::npos)
        << s.reason;
  }

  EXPECT_EQ(c.rows, kTcRows);
  EXPECT_EQ(c.d_groups_per_warp, T::kDGroupsPerWarp);
  EXPECT_EQ(c.warps, T::kWarps);
  EXPECT_EQ(c.threads, T::kThreads);
  EXPECT_EQ(c.batch_tiles, 3);  // ceil(40 / 16)
  EXPECT_EQ(c.ctas, 9);         // 3 heads x 3 tiles
  // R's registers: the forward's r_frag[NG][G][D/16][2] and the backward's
  // r_frag[NG][G·D/16][2], 32-bit each, and the brief's G·D·D·2 / (4 · threads).
  const int ng = T::kDGroupsPerWarp;
  EXPECT_EQ(c.r_registers_per_thread, ng * C::kGates * (D / 16) * 2);
  EXPECT_EQ(c.r_registers_per_thread, ng * (C::kGates * D / 16) * 2);
  EXPECT_EQ(int64_t(c.r_registers_per_thread) * 4 * T::kThreads, int64_t(C::kGates) * D * D * 2);

  EXPECT_EQ(c.forward_smem_bytes, Fw::smem_bytes());
  EXPECT_EQ(c.backward_smem_bytes, Bw::smem_bytes());
  EXPECT_EQ(c.backward_prefetch, Bw::kPrefetch);
  EXPECT_EQ(c.backward_stages, Bw::kStages);
  EXPECT_EQ(c.backward_stage_bytes, Bw::stage_bytes());
}

template <class C>
void check_cell(const DeviceProps& device, DType dtype) {
  check_case<C, 16>(device, dtype);
  check_case<C, 32>(device, dtype);
  check_case<C, 64>(device, dtype);
  check_case<C, 128>(device, dtype);
}

TEST(TcTiling, EveryCompiledCaseMatchesTheKernelsConstexprs) {
  static_assert(std::size(kTcHeadDims) == 4, "a compiled head dim was added: check it here too");
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
  // The compiled head dims are kTcHeadDims, no more, no fewer.
  const Domain& compiled = p.variables()[p.index_of("compiled_head_dim")].domain;
  std::set<int64_t> model_dims, kernel_dims(std::begin(kTcHeadDims), std::end(kTcHeadDims));
  for (uint64_t i = 0; i < compiled.size(); ++i) model_dims.insert(compiled.value_at(i));
  EXPECT_EQ(model_dims, kernel_dims);
  for (int d = 16; d <= 1024; d += 16) {
    const TcSelection s = select_tc_config(device_fixture("h200"), Cell::kElman, d, 16, DType::kBf16);
    EXPECT_EQ(s.config.has_value(), fused::tc_head_dim_compiled(d)) << d << ": " << s.reason;
  }
}

// Worked by hand from tc_tiling.h's formulas.
TEST(TcTiling, HandCheckedSelections) {
  const DeviceProps h200 = device_fixture("h200");
  // LSTM 12x64 bf16, batch 16: 64 / 8 = 8 warps, 256 threads; R 4·64·64·2 / (4·256) = 32.
  // Forward: (5 stages · 16 · (4·64 + 8) + 2 · 16 · (64 + 8)) · 2 = 46848 B.
  // Backward stage: 16 · (((4 + 2)·64 + 4) · 4 + (2·64 + 8) · 2) = 29184 B; delta tiles
  // 2 · 16 · (4·64 + 8) · 2 = 16896 B; 4 stages fit 227 KiB: 4 · 29184 + 16896 = 133632 B.
  TcSelection s = select_tc_config(h200, FusedShape{Cell::kLstm, 12, 64, 16, DType::kBf16});
  ASSERT_TRUE(s.config) << s.reason;
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

  // LSTM 6x128: 16 warps, 512 threads, so __launch_bounds__ caps registers at
  // 65536 / 512 = 128; R takes 64. Backward: 4 stages of 57856 B + 33280 B =
  // 264704 B > 227 KiB, 3 stages: 206848 B. ptxas does spill these kernels.
  s = select_tc_config(h200, FusedShape{Cell::kLstm, 6, 128, 16, DType::kBf16});
  ASSERT_TRUE(s.config) << s.reason;
  EXPECT_EQ(s.config->threads, 512);
  EXPECT_EQ(s.config->r_registers_per_thread, 64);
  EXPECT_EQ(s.config->register_cap, 128);
  EXPECT_EQ(s.config->forward_smem_bytes, 91904);
  EXPECT_EQ(s.config->backward_smem_bytes, 206848);
  EXPECT_EQ(s.config->backward_prefetch, 2);
  EXPECT_TRUE(s.config->may_spill());

  // GRU (3 gates, odd) 128: two groups of 8 dims per warp, 128 / 16 = 8 warps;
  // R 3·128·128·2 / (4·256) = 96 registers; batch 33 takes 3 tiles.
  s = select_tc_config(h200, FusedShape{Cell::kGru, 2, 128, 33, DType::kFp16});
  ASSERT_TRUE(s.config) << s.reason;
  EXPECT_EQ(s.config->d_groups_per_warp, 2);
  EXPECT_EQ(s.config->warps, 8);
  EXPECT_EQ(s.config->threads, 256);
  EXPECT_EQ(s.config->r_registers_per_thread, 96);
  EXPECT_EQ(s.config->ctas, 6);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(TcTiling, InfeasibleCasesSayWhich) {
  const DeviceProps h200 = device_fixture("h200");
  // D = 256: 1024 threads, but R (512 KiB) is twice the registers of an SM.
  TcSelection s = select_tc_config(h200, FusedShape{Cell::kLstm, 3, 256, 16, DType::kBf16});
  ASSERT_FALSE(s.config);
  EXPECT_EQ(s.binding, "r_regs_per_sm");
  EXPECT_TRUE(contains(s.reason, "R of one head needs 4·256·256·2 B = 512 KiB of registers; one SM has 256 KiB"))
      << s.reason;
  ASSERT_TRUE(s.needs);
  EXPECT_EQ(s.needs->threads, 1024);
  EXPECT_EQ(s.needs->r_registers_per_thread, 128);

  // D = 768: 96 warps, 3072 threads, over the 1024 of a block before anything else.
  s = select_tc_config(h200, FusedShape{Cell::kLstm, 1, 768, 16, DType::kBf16});
  ASSERT_FALSE(s.config);
  EXPECT_EQ(s.binding, "threads_fit");
  EXPECT_TRUE(contains(s.reason, "32·768/8 = 3072 > 1024")) << s.reason;
  EXPECT_GE(s.broken.size(), 4u);  // and registers, shared memory, not compiled

  // Fits every limit, but no kernel is compiled for it.
  s = select_tc_config(h200, Cell::kLstm, 48, 16, DType::kBf16);
  EXPECT_EQ(s.binding, "head_dim_compiled");
  EXPECT_TRUE(contains(s.reason, "head dim 48 is not compiled")) << s.reason;
  s = select_tc_config(h200, Cell::kGru, 72, 16, DType::kBf16);
  EXPECT_EQ(s.binding, "head_dim_mma");
  s = select_tc_config(h200, Cell::kLstm, 64, 16, DType::kFp32);
  EXPECT_EQ(s.binding, "tensor_core_storage");
  EXPECT_TRUE(contains(s.reason, "not fp32")) << s.reason;
}

TEST(TcTiling, A100RejectsWhatDoesNotFitItsSharedMemory) {
  const DeviceProps a100 = device_fixture("a100");
  ASSERT_EQ(a100.smem_per_block_optin, 163 * 1024);
  // LSTM 128: the backward's 206848 B (laid out for 227 KiB) exceed 166912 B.
  TcSelection s = select_tc_config(a100, Cell::kLstm, 128, 16, DType::kBf16);
  ASSERT_FALSE(s.config);
  EXPECT_EQ(s.binding, "bw_smem_fits");
  EXPECT_TRUE(contains(s.reason, "the backward needs 206848 B")) << s.reason;
  EXPECT_TRUE(contains(s.reason, "166912 B")) << s.reason;
  // sLSTM 128 (214528 B) and GRU 128 (207360 B) likewise, and sLSTM 64: four
  // stages of 16 · ((9·64 + 4) · 4 + (4·64 + 8) · 2) = 45568 B + 16896 B = 199168 B.
  EXPECT_FALSE(select_tc_config(a100, Cell::kSlstm, 128, 16, DType::kBf16).config);
  EXPECT_FALSE(select_tc_config(a100, Cell::kGru, 128, 16, DType::kBf16).config);
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

// The tensor-core kernels' tiling model (models/tc_tiling.txt) on real
// devices against the tiling the kernels are compiled with. The build solves
// the same model once per cell, compiled head dim and kind of device with the
// device's limits lifted (fused/tc_tiling_table.h), and the kernels lay out
// their buffers by those rows (asserting at compile time that their byte
// counts are the model's). At run time the tuner solves the model with a
// card's limits: where the case fits the card, every number must be the
// compiled row's (the fused backend launches the compiled tiling), and where
// it does not, the tuner must say which limit breaks. The hand-checked
// selections below work the model's rules by hand, so that a changed rule
// fails here as well as retiling the kernels.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <type_traits>
#include <utility>

#include "cells/elman.h"
#include "cells/gru.h"
#include "cells/lstm.h"
#include "cells/slstm.h"
#include "flashrnn/tune/device_props.h"
#include "flashrnn/tune/errors.h"
#include "flashrnn/tune/tc_explain.h"
#include "flashrnn/tune/tc_model.h"
#include "flashrnn/tune/tc_select.h"
#include "fused/tc_tiling.h"

namespace flashrnn::tune {
namespace {

using fused::kTcHeadDims;
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

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The model's constraints on the split (tc_select.cpp's is_split_label): one of
// them is binding where no cluster splits a head.
bool is_split_label(const std::string& label) {
  for (const char* l : {"cluster_cap_fit", "head_warp_dims", "split_warps", "split_even", "head_split", "warp_dims"})
    if (label == l) return true;
  return false;
}

// The compiled tiling of a cell's head on devices with or without clusters.
const fused::TcTilingRow* compiled_row(Cell cell, int d, bool clusters) {
  return fused::tc_tiling_row(cell_gates(cell), cell_states(cell), cell_cache(cell), d, clusters);
}

// The case's selection against the tiling the kernels use on the device,
// TcTiling<C, D, K> with K = tc_cluster_size<C>(D, device.has_clusters()).
template <class C, int D, int K>
void check_tiling(const DeviceProps& device, const FusedShape& shape, const TcSelection& s) {
  using T = TcTiling<C, D, K>;
  using Fw = TcForward<C, Half16, D, K>;
  using Bw = TcBackward<C, Half16, D, K>;
  const bool runs = Fw::smem_bytes() <= device.smem_per_block_optin && Bw::smem_bytes() <= device.smem_per_block_optin;
  ASSERT_EQ(bool(s.config), runs) << s.reason;
  // The model may admit larger clusters too; its first solution (what
  // select_tc_config takes) is the kernels' fewest.
  const SolveResult all = solve_all(TcTilingModel(device, shape).problem());
  if (runs) {
    ASSERT_FALSE(all.solutions.empty());
    EXPECT_EQ(TcTilingModel(device, shape).config(all.solutions.front()).cluster, K);
  }
  // Where it does not run, the binding constraint is shared memory, and the
  // numbers are the kernels' tiling with the limits lifted.
  ASSERT_TRUE(runs || s.needs) << s.reason;
  const TcConfig& c = runs ? *s.config : *s.needs;
  if (!runs) {
    EXPECT_EQ(s.binding, Fw::smem_bytes() > device.smem_per_block_optin ? "fw_smem_fits" : "bw_smem_fits");
    EXPECT_TRUE(contains(s.reason, std::to_string(device.smem_per_block_optin))) << s.reason;
  }
  EXPECT_EQ(c.cluster, K);
  EXPECT_EQ(c.cta_dims, T::kCtaDims);
  EXPECT_EQ(c.d_groups_per_warp, T::kDGroupsPerWarp);
  EXPECT_LE(c.warps, c.cta_warp_cap);
  EXPECT_EQ(c.batch_tiles, 3);   // ceil(40 / 16)
  EXPECT_EQ(c.ctas, 9 * K);      // 3 heads x 3 tiles x the cluster (the grid's x · y)
  // R's registers: G·D·D·2 bytes of one head over the cluster's threads.
  EXPECT_EQ(int64_t(c.r_registers_per_thread) * 4 * c.threads * K, int64_t(C::kGates) * D * D * 2);
  if (!runs) return;  // `needs` has every limit lifted, R's register cap too: another split of K
  // The card's solution is the compiled tiling, number for number.
  EXPECT_EQ(c.warps, T::kDimWarps);
  EXPECT_EQ(c.k_split, T::kKSplit);
  EXPECT_EQ(c.threads, T::kThreads);
  EXPECT_EQ(c.r_registers_per_thread, T::kRRegisters);
  EXPECT_TRUE(c.backward);
  EXPECT_EQ(c.r_register_ktiles, T::kRegisterRKTiles);
  EXPECT_EQ(c.r_shared_ktiles, T::kSharedRKTiles);
  EXPECT_EQ(c.r_forward_registers, 2 * C::kGates * T::kDGroupsPerWarp * T::kRegisterRKTiles);
  EXPECT_EQ(c.forward_prefetch, Fw::kPrefetch);
  EXPECT_EQ(c.forward_slice_exchange, Fw::kSliceExchange);
  EXPECT_EQ(c.forward_save_tiles, Fw::kSaveTile);
  EXPECT_EQ(c.forward_smem_bytes, Fw::smem_bytes());  // save tiles included
  EXPECT_EQ(c.backward_stage_bytes, Bw::stage_bytes());
  EXPECT_EQ(c.backward_smem_bytes, Bw::smem_bytes());
  EXPECT_EQ(c.backward_prefetch, Bw::kPrefetch);
  EXPECT_EQ(c.backward_stages, Bw::kStages);
  EXPECT_EQ(c.backward_threads, Bw::kThreads);
  EXPECT_EQ(c.backward_register_slices, Bw::kRegisterSlices);
  EXPECT_EQ(c.backward_shared_slices, Bw::kSharedSlices);
  EXPECT_EQ(c.backward_slice_bytes, Bw::kSliceBytes);
  EXPECT_EQ(c.backward_ring_slots, Bw::kRingSlots);
  EXPECT_EQ(c.backward_streams, Bw::kStreams);
  EXPECT_EQ(c.backward_one_stage, Bw::kOneStage);
  // Rᵀ's fragments r_frag[QR][G_w][G·Dc/16][2] of the slices in registers, 32-bit each.
  EXPECT_EQ(c.backward_r_registers, 2 * T::kDGroupsPerWarp * Bw::kKTiles * Bw::kRegisterSlices);
  if (!T::kWide) {
    // All of Rᵀ in registers, as many as R takes in the forward.
    EXPECT_EQ(c.backward_r_registers, T::kRRegisters);
    EXPECT_EQ(c.backward_shared_slices, 0);
    EXPECT_FALSE(c.backward_one_stage);
  } else {
    // What the docs say of a wide head's backward: some slices of Rᵀ in
    // shared memory, resident up to 512 dims and streamed from 576 on through
    // a ring of at least two, beside one stage for sLSTM 1x768 only.
    EXPECT_LE(c.backward_r_registers, fused::kTcWideBackwardRRegisters);
    EXPECT_GT(c.backward_shared_slices, 0);
    EXPECT_EQ(c.backward_streams, D > 512);
    EXPECT_EQ(c.backward_one_stage, C::kStates == 4 && D == 768);
    EXPECT_EQ(c.backward_prefetch, c.backward_one_stage ? 0 : 1);
    EXPECT_GE(c.backward_ring_slots, 2);
    EXPECT_LE(c.backward_smem_bytes + c.backward_static_smem_bytes, kTcSmemBudget);
  }
}

// One (cell, head dim) case on one device, checked field by field against the
// tiling the kernels compile for the device (with or without clusters).
template <class C, int D>
void check_case(const DeviceProps& device, DType dtype) {
  const Cell cell = tuner_cell<C>();
  SCOPED_TRACE(std::string(to_string(cell)) + " D=" + std::to_string(D) + " " +
               std::string(to_string(dtype)) + " on " + device.name);

  // The cell's constants the model takes.
  EXPECT_EQ(cell_gates(cell), C::kGates);
  EXPECT_EQ(cell_states(cell), C::kStates);
  EXPECT_EQ(cell_cache(cell), C::kCache);

  const FusedShape shape{cell, 3, D, 40, dtype};
  const TcSelection s = select_tc_config(device, shape);
  const int expected = fused::tc_cluster_size<C>(D, device.has_clusters());
  const int with_clusters = fused::tc_cluster_size<C>(D, true);
  if (expected == 0) {
    ASSERT_FALSE(s.config);
    if (with_clusters > 0) {
      // A head of more than 8 warps on a device without clusters needs the
      // cluster a device with clusters takes.
      ASSERT_FALSE(device.has_clusters());
      EXPECT_EQ(s.binding, "cluster_fits");
      EXPECT_TRUE(contains(s.reason, "head dim " + std::to_string(D) +
                                         " needs a thread-block cluster of " +
                                         std::to_string(with_clusters) +
                                         " CTAs (sm_90); this device has none"))
          << s.reason;
      ASSERT_TRUE(s.needs);
      EXPECT_EQ(s.needs->cluster, with_clusters);
    } else if (C::kGates % 2 == 1 && C::kGates * 2 * D / 8 > fused::kTcMaxRRegisters) {
      // A GRU head whose R exceeds the register cap (and an odd gate count
      // splits no K): among the limits it breaks (on a device without
      // clusters the split comes first).
      if (device.has_clusters()) {
        EXPECT_EQ(s.binding, "r_regs_cap");
      }
      const std::string says = "R takes " + std::to_string(C::kGates * 2 * D / 8) + " registers per thread";
      EXPECT_TRUE(std::any_of(s.broken.begin(), s.broken.end(), [&](const std::string& w) { return contains(w, says); }))
          << s.reason;
    } else {
      // A head no cluster splits (LSTM/sLSTM 240) is reported by the split.
      EXPECT_TRUE(is_split_label(s.binding)) << s.binding;
      EXPECT_TRUE(contains(s.reason, "head dim " + std::to_string(D) + " has no cluster split")) << s.reason;
      EXPECT_FALSE(s.needs);
    }
    return;
  }
  const bool checked = fused::with_tc_cluster<C, D>(
      expected,
      [&](auto k) {
        check_tiling<C, D, decltype(k)::value>(device, shape, s);
        return true;
      },
      false);
  EXPECT_TRUE(checked) << "no compiled tiling of cluster " << expected;
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

TEST(TcTiling, EveryDevicesSolutionIsTheCompiledTiling) {
  for (const std::string& name : device_fixture_names())
    for (DType dtype : {DType::kBf16, DType::kFp16}) {
      const DeviceProps device = device_fixture(name);
      check_cell<cells::Lstm>(device, dtype);
      check_cell<cells::Slstm>(device, dtype);
      check_cell<cells::Gru>(device, dtype);
      check_cell<cells::Elman>(device, dtype);
    }
}

// The compiled table is the model's as it is now (no stale header): every
// tiling the model solves for the build's compile targets has its row, with
// the solution's numbers, and the table has no other row.
TEST(TcTiling, TheCompiledTableIsTheModelsSolution) {
  const std::vector<CompiledTiling> tilings = solve_compiled_tilings();
  for (const CompiledTiling& t : tilings) {
    SCOPED_TRACE(std::string(to_string(t.cell)) + " D=" + std::to_string(t.head_dim) +
                 (t.clusters ? " clusters" : ""));
    const fused::TcTilingRow* row = compiled_row(t.cell, t.head_dim, t.clusters);
    ASSERT_TRUE(row);
    EXPECT_EQ(row->cluster, t.config.cluster);
    EXPECT_EQ(row->threads, t.config.threads);
    EXPECT_EQ(row->forward_smem_bytes, t.config.forward_smem_bytes);
    EXPECT_EQ(row->backward_smem_bytes, t.config.backward_smem_bytes);
    EXPECT_EQ(row->backward_ring_slots, t.config.backward_ring_slots);
  }
  EXPECT_EQ(tilings.size(), std::size(fused::kTcTilingTable));
}

// The model text gives no parameter a value: TcTilingModel binds each one
// (the kernels' constants from tc_constants.h), and refuses a text whose
// parameters differ from its bindings.
TEST(TcTiling, EveryParameterIsBoundAndOnlyThose) {
  const DeviceProps h200 = device_fixture("h200");
  const std::string text(tc_tiling_model_text());
  EXPECT_NO_THROW(TcTilingModel(h200, FusedShape{}, text));
  auto refused = [&](const std::string& changed, const std::string& says) {
    SCOPED_TRACE(says);
    try {
      TcTilingModel{h200, FusedShape{}, changed};
      ADD_FAILURE() << "the model took a text whose parameters differ from its bindings";
    } catch (const ProblemError& e) {
      EXPECT_TRUE(contains(e.what(), says)) << e.what();
    }
  };
  auto replaced = [&](const std::string& from, const std::string& to) {
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? text : text.substr(0, at) + to + text.substr(at + from.size());
  };
  // A kernel constant the text declares and the code does not bind.
  refused(text + "param max_stages  # a constant with no binding\n",
          "parameter 'max_stages' has no binding in tc_model.cpp");
  // A constant the code binds and the text does not declare as a parameter.
  refused(replaced("\nparam max_ring ", "\nvar max_ring in 1..8 "),
          "tc_model.cpp binds 'max_ring', which tc_tiling.txt does not declare as a parameter");
  // A number copied into the text.
  refused(replaced("\nparam max_ring ", "\nparam max_ring = 6 "),
          "parameter 'max_ring' has a value in the text");
}


// Every multiple of 16 up to 1024, every cell, a device with clusters and one
// without: the device runs exactly the compiled tilings that fit its shared
// memory, with the compiled cluster; and every other case says why in words.
TEST(TcTiling, EveryHeadDimUpTo1024RunsExactlyWhereTheKernelsDo) {
  for (const char* name : {"h200", "a100"}) {
    const DeviceProps device = device_fixture(name);
    for (Cell cell : {Cell::kLstm, Cell::kSlstm, Cell::kGru, Cell::kElman})
      for (int d = 16; d <= 1024; d += 16) {
        SCOPED_TRACE(std::string(to_string(cell)) + " D=" + std::to_string(d) + " on " + name);
        const fused::TcTilingRow* row = compiled_row(cell, d, device.has_clusters());
        const TcSelection s = select_tc_config(device, FusedShape{cell, 1, d, 16, DType::kBf16});
        const bool fits = row && row->forward_smem_bytes <= device.smem_per_block_optin &&
                          row->backward_smem_bytes <= device.smem_per_block_optin;
        EXPECT_EQ(s.config.has_value(), fits) << s.reason;
        if (s.config) {
          EXPECT_EQ(s.config->cluster, row->cluster);
          EXPECT_TRUE(s.config->backward);
          continue;
        }
        // Why not, in words: never the solver's raw conflict.
        EXPECT_FALSE(s.binding.empty());
        EXPECT_FALSE(contains(s.reason, "constraint '")) << s.binding << ": " << s.reason;
        if (!row && compiled_row(cell, d, true) && !device.has_clusters()) {
          EXPECT_EQ(s.binding, "cluster_fits");
        }
      }
  }
}

// Worked by hand from the model's rules (tc_tiling.txt).
TEST(TcTiling, HandCheckedSelections) {
  const DeviceProps h200 = device_fixture("h200");
  // LSTM 12x64 bf16 on the H200 (clusters), batch 16: 64 / 8 = 8 warps; an even
  // gate count with clusters takes at most 4 per CTA (tc_cta_warp_cap), so the
  // fewest c with c | 8 and 8 / c <= 4 is 2: 2 CTAs of 4 warps, 32 dims each,
  // 128 threads; 12 heads x 1 tile x 2 = 24 CTAs. R 4·1·64/8 = 32
  // (= 4·64·64·2 / (4 · 128 · 2)); working 44 + 4·4 = 60.
  // Forward (kStages 5, Wx of the CTA's 32 dims, h of the whole head; two save
  // tiles of 2 + 4 + 1 slots of 16 rows of 32 + 8 floats, 35840 B):
  //   (5 · 16 · (4·32 + 8) + 2 · 16 · (64 + 8)) · 2 + 35840 = (10880 + 2304) · 2 + 35840
  //   = 62208 B.
  // Backward stage: 16 · ((6·32 + 4) · 4 + (2·32 + 8) · 2) = 16 · (784 + 144) = 14848 B;
  // delta tiles (the CTA's dims) 2 · 16 · (4·32 + 8) · 2 = 8704 B, received sums
  // (from 1 other CTA) 2 · 1 · 16 · (32 + 8) · 4 = 5120 B; four stages
  // 59392 + 8704 + 5120 = 73216 B <= 232448: prefetch 3.
  TcSelection s = select_tc_config(h200, FusedShape{Cell::kLstm, 12, 64, 16, DType::kBf16});
  ASSERT_TRUE(s.config) << s.reason;
  EXPECT_EQ(s.config->cta_warp_cap, 4);
  EXPECT_EQ(s.config->cluster, 2);
  EXPECT_EQ(s.config->cta_dims, 32);
  EXPECT_EQ(s.config->warps, 4);
  EXPECT_EQ(s.config->threads, 128);
  EXPECT_EQ(s.config->d_groups_per_warp, 1);
  EXPECT_EQ(s.config->ctas, 24);
  EXPECT_EQ(s.config->r_registers_per_thread, 32);
  EXPECT_EQ(s.config->working_registers, 60);
  EXPECT_EQ(s.config->register_cap, 255);  // min(255, 65536 / 128 = 512)
  EXPECT_EQ(s.config->forward_smem_bytes, 62208);
  EXPECT_EQ(s.config->backward_stage_bytes, 14848);
  EXPECT_EQ(s.config->backward_smem_bytes, 73216);
  EXPECT_EQ(s.config->backward_prefetch, 3);
  EXPECT_TRUE(contains(describe(*s.config), "2 CTAs per head (cluster, 32 dims each)"))
      << describe(*s.config);

  // LSTM 6x128: 16 warps; 2 CTAs of 8 and 3 (no divisor) do not do, 4 CTAs of 4
  // warps do: cluster 4, 32 dims, 128 threads, 6 x 1 x 4 = 24 CTAs; R 4·128/8 = 64.
  // Forward (5 · 16 · 136 + 2 · 16 · (128 + 8)) · 2 + 35840 = (10880 + 4352) · 2 + 35840
  // = 66304 B (save tiles as above).
  // Backward: stage 14848 B and delta tiles 8704 B (32 dims as above), received
  // sums from 3 CTAs 2 · 3 · 16 · 40 · 4 = 15360 B: four stages 59392 + 8704 + 15360
  // = 83456 B.
  s = select_tc_config(h200, FusedShape{Cell::kLstm, 6, 128, 16, DType::kBf16});
  ASSERT_TRUE(s.config) << s.reason;
  EXPECT_EQ(s.config->cluster, 4);
  EXPECT_EQ(s.config->cta_dims, 32);
  EXPECT_EQ(s.config->warps, 4);
  EXPECT_EQ(s.config->threads, 128);
  EXPECT_EQ(s.config->ctas, 24);
  EXPECT_EQ(s.config->r_registers_per_thread, 64);
  EXPECT_EQ(s.config->register_cap, 255);
  EXPECT_EQ(s.config->forward_smem_bytes, 66304);
  EXPECT_EQ(s.config->backward_smem_bytes, 83456);
  EXPECT_EQ(s.config->backward_prefetch, 3);

  // GRU (3 gates, odd) 128: two groups of 8 dims per warp, 128 / 16 = 8 warps;
  // an odd gate count keeps the cap of 8 with clusters: one CTA, 256 threads;
  // R 3·2·128/8 = 96 (= 3·128·128·2 / (4·256)); batch 33 takes 3 tiles: 2 x 3 = 6 CTAs.
  s = select_tc_config(h200, FusedShape{Cell::kGru, 2, 128, 33, DType::kFp16});
  ASSERT_TRUE(s.config) << s.reason;
  EXPECT_EQ(s.config->cta_warp_cap, 8);
  EXPECT_EQ(s.config->cluster, 1);
  EXPECT_EQ(s.config->d_groups_per_warp, 2);
  EXPECT_EQ(s.config->warps, 8);
  EXPECT_EQ(s.config->threads, 256);
  EXPECT_EQ(s.config->r_registers_per_thread, 96);
  EXPECT_EQ(s.config->ctas, 6);

  // LSTM 3x256: 256 / 8 = 32 warps; the fewest c <= 8 with c | 32 and 32 / c <= 4
  // is 8: a cluster of 8 CTAs of 4 warps (128 threads), 32 dims each. R
  // 4·256·256·2 / (4 · 128 · 8) = 128 = 4·1·256/8 registers, at the cap; working
  // 60. Grid 3 heads x 1 tile x 8 = 24 CTAs.
  // Forward: Wx stages of the CTA's 32 dims, h tiles of the whole head, save tiles:
  //   (5 · 16 · (4·32 + 8) + 2 · 16 · (256 + 8)) · 2 + 35840 = (10880 + 8448) · 2 + 35840
  //   = 74496 B.
  // Backward stage and delta tiles (the CTA's 32 dims) 14848 B and 8704 B as above;
  //   received sums from 7 CTAs 2 · 7 · 16 · 40 · 4 = 35840 B; four stages
  //   59392 + 8704 + 35840 = 103936 B <= 232448, so prefetch 3.
  s = select_tc_config(h200, FusedShape{Cell::kLstm, 3, 256, 16, DType::kBf16});
  ASSERT_TRUE(s.config) << s.reason;
  EXPECT_EQ(s.config->cluster, 8);
  EXPECT_EQ(s.config->cta_dims, 32);
  EXPECT_EQ(s.config->warps, 4);
  EXPECT_EQ(s.config->threads, 128);
  EXPECT_EQ(s.config->r_registers_per_thread, 128);
  EXPECT_EQ(s.config->working_registers, 60);
  EXPECT_EQ(s.config->register_cap, 255);
  EXPECT_EQ(s.config->batch_tiles, 1);
  EXPECT_EQ(s.config->ctas, 24);
  EXPECT_EQ(s.config->forward_smem_bytes, 74496);
  EXPECT_EQ(s.config->backward_stage_bytes, 14848);
  EXPECT_EQ(s.config->backward_smem_bytes, 103936);
  EXPECT_EQ(s.config->backward_prefetch, 3);
  EXPECT_TRUE(contains(describe(*s.config), "8 CTAs per head (cluster, 32 dims each)"))
      << describe(*s.config);

  // LSTM 192: 24 warps; c = 2, 3, 4 leave 12, 8, 6 > 4, 5 does not divide 24,
  // 6 CTAs of 4 do: cluster 6, 32 dims each; R 4·192/8 = 96. Forward
  // (5 · 16 · 136 + 2 · 16 · 200) · 2 + 35840 = (10880 + 6400) · 2 + 35840 = 70400 B; backward
  // 4 · 14848 + 8704 + 2 · 5 · 16 · 40 · 4 = 59392 + 8704 + 25600 = 93696 B.
  s = select_tc_config(h200, FusedShape{Cell::kLstm, 1, 192, 16, DType::kBf16});
  ASSERT_TRUE(s.config) << s.reason;
  EXPECT_EQ(s.config->cluster, 6);
  EXPECT_EQ(s.config->cta_dims, 32);
  EXPECT_EQ(s.config->threads, 128);
  EXPECT_EQ(s.config->r_registers_per_thread, 96);
  EXPECT_EQ(s.config->ctas, 6);
  EXPECT_EQ(s.config->forward_smem_bytes, 70400);
  EXPECT_EQ(s.config->backward_smem_bytes, 93696);

  // LSTM 48 and 80: 6 warps, 2 CTAs of 3 (24 dims, 96 threads); 10 warps: 2 CTAs
  // of 5 are too many, 5 CTAs of 2 (16 dims, 64 threads).
  s = select_tc_config(h200, Cell::kLstm, 48, 16, DType::kBf16);
  ASSERT_TRUE(s.config) << s.reason;
  EXPECT_EQ(s.config->cluster, 2);
  EXPECT_EQ(s.config->cta_dims, 24);
  EXPECT_EQ(s.config->threads, 96);
  s = select_tc_config(h200, Cell::kLstm, 80, 16, DType::kBf16);
  ASSERT_TRUE(s.config) << s.reason;
  EXPECT_EQ(s.config->cluster, 5);
  EXPECT_EQ(s.config->cta_dims, 16);
  EXPECT_EQ(s.config->threads, 64);

  // Elman 256 (1 gate, odd: 2 groups of 8 per warp, cap 8): 256 / 16 = 16 warps,
  // 2 CTAs of 8 (128 dims, 256 threads); R 1·2·256/8 = 64. Forward
  // (5 · 16 · (128 + 8) + 2 · 16 · 264) · 2 = 38656 B; backward stage
  // 16 · ((2·128 + 4) · 4 + (128 + 8) · 2) = 20992 B, delta tiles 2 · 16 · 136 · 2
  // = 8704 B, received sums 2 · 1 · 16 · 136 · 4 = 17408 B, four stages
  // 83968 + 8704 + 17408 = 110080 B.
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
  EXPECT_EQ(s.config->backward_smem_bytes, 110080);

  // LSTM 1x768 (a wide head): 96 warps > 16 CTAs of 4, so the cap is 6: 16
  // CTAs of 6 warps, 48 dims each. R would take 4·768/8 = 384 registers per
  // thread > 128, so K is split: 12 warps, 384 threads (register cap 168), R
  // 192 per thread, 12 of a share's 24 k-tiles per gate in registers (96) and
  // 12 in shared memory: 12·4·384·8 = 147456 B, + Wx (one step ahead, 2
  // stages) 2·16·(4·48 + 8)·2 = 12800 B + h by CTA slice (K split, an even
  // cluster, 48 = 3·16 dims a CTA) 2·16·16·(48 + 8)·2 = 57344 B (the whole
  // head's rows would take 2·16·(768 + 8)·2 = 49664 B) + partial sums
  // 8·384·4 = 12288 B = 229888 B.
  // The backward: 6 warps (192 threads) of 4·48/16 = 12 k-tiles per slice of
  // Rᵀ, 2·12 = 24 registers a slice: floor(96 / 24) = 4 of the 16 slices in
  // registers (96), 12 in shared memory of 12·192·8 = 18432 B each. Two
  // stages of 16 · ((6·48 + 4) · 4 + (2·48 + 8) · 2) = 22016 B, delta tiles
  // 2 · 16 · (4·48 + 8) · 2 = 12800 B, received sums 2 · 15 · 16 · 56 · 4 =
  // 107520 B: 164352 B, which with the kernel's 256 B of static shared
  // memory leaves room for floor((232448 - 256 - 164352) / 18432) =
  // floor(67840 / 18432) = 3 < 12 slices: streamed by a producer warp (224
  // threads); 3 slots, no fewer than kTcMinTwoStageRing, so it keeps the
  // two stages (prefetch 1) and a ring of min(3, 6) = 3, 164352 + 3 · 18432
  // = 219648 B.
  // The same head as sLSTM (stage 16 · ((8·48 + 4) · 4 + (4·48 + 8) · 2) =
  // 31232 B): two stages would leave floor((232448 - 256 - 62464 - 120320) /
  // 18432) = floor(49408 / 18432) = 2 < 3 slots, so it takes one stage
  // (prefetch 0; 151552 B with the tiles) and a ring of
  // min(floor(80640 / 18432), 6) = 4, 151552 + 4 · 18432 = 225280 B. LSTM
  // 1x640 (16 CTAs of 5 warps, 40 dims; slices of 10·160·8 = 12800 B; two
  // stages of 16 · ((6·40 + 4) · 4 + (2·40 + 8) · 2) = 18432 B and tiles of
  // 10752 + 92160 B: 139776 B): a ring of 6 (kTcMaxRing) of the
  // floor(92416 / 12800) = 7 that fit beside two stages (prefetch 1),
  // 139776 + 6 · 12800 = 216576 B.
  s = select_tc_config(h200, FusedShape{Cell::kLstm, 1, 768, 16, DType::kBf16});
  ASSERT_TRUE(s.config) << s.reason;
  EXPECT_EQ(s.config->cta_warp_cap, 6);
  EXPECT_EQ(s.config->cluster, 16);
  EXPECT_EQ(s.config->cta_dims, 48);
  EXPECT_EQ(s.config->warps, 6);
  EXPECT_EQ(s.config->k_split, 2);
  EXPECT_EQ(s.config->threads, 384);
  EXPECT_EQ(s.config->register_cap, 168);
  EXPECT_EQ(s.config->ctas, 16);
  EXPECT_EQ(s.config->r_registers_per_thread, 192);
  EXPECT_EQ(s.config->r_register_ktiles, 12);
  EXPECT_EQ(s.config->r_shared_ktiles, 12);
  EXPECT_EQ(s.config->r_forward_registers, 96);
  EXPECT_EQ(s.config->forward_prefetch, 1);
  EXPECT_TRUE(s.config->forward_slice_exchange);
  EXPECT_EQ(s.config->forward_smem_bytes, 229888);
  EXPECT_TRUE(s.config->backward);
  EXPECT_EQ(s.config->backward_threads, 224);
  EXPECT_EQ(s.config->backward_register_slices, 4);
  EXPECT_EQ(s.config->backward_r_registers, 96);
  EXPECT_EQ(s.config->backward_shared_slices, 12);
  EXPECT_EQ(s.config->backward_slice_bytes, 18432);
  EXPECT_EQ(s.config->backward_ring_slots, 3);
  EXPECT_TRUE(s.config->backward_streams);
  EXPECT_FALSE(s.config->backward_one_stage);
  EXPECT_EQ(s.config->backward_prefetch, 1);
  EXPECT_EQ(s.config->backward_stages, 2);
  EXPECT_EQ(s.config->backward_stage_bytes, 22016);
  EXPECT_EQ(s.config->backward_smem_bytes, 219648);
  EXPECT_EQ(s.config->backward_static_smem_bytes, 256);
  EXPECT_TRUE(contains(describe(*s.config), "x 2 shares of K")) << describe(*s.config);
  EXPECT_TRUE(contains(describe(*s.config), "12 of 24 k-tiles in shared memory")) << describe(*s.config);
  EXPECT_TRUE(contains(describe(*s.config), "forward 229888 B (prefetch 1; h by CTA slice)"))
      << describe(*s.config);
  EXPECT_TRUE(contains(describe(*s.config), "backward 219648 B (prefetch 1, 2 stages; Rᵀ: 4 of 16 slices in "
                                            "96 registers, 12 streamed through a ring of 3"))
      << describe(*s.config);
  EXPECT_TRUE(contains(explain_tc_choice(h200, FusedShape{Cell::kLstm, 1, 768, 16, DType::kBf16}),
                       "forward 229888 B (h tiles by CTA slice: 16 x 16 rows of 48 + 8), "
                       "backward 219648 B (prefetch 1: 2 stages of 22016 B + two delta tiles + two tiles of "
                       "received sums + a ring of 3 slices of Rᵀ of 18432 B; + 256 B static)"));
  s = select_tc_config(h200, FusedShape{Cell::kSlstm, 1, 768, 16, DType::kBf16});
  ASSERT_TRUE(s.config) << s.reason;
  EXPECT_EQ(s.config->backward_stage_bytes, 31232);
  EXPECT_TRUE(s.config->backward_streams);
  EXPECT_TRUE(s.config->backward_one_stage);
  EXPECT_EQ(s.config->backward_prefetch, 0);
  EXPECT_EQ(s.config->backward_stages, 1);
  EXPECT_EQ(s.config->backward_ring_slots, 4);
  EXPECT_EQ(s.config->backward_smem_bytes, 225280);
  EXPECT_TRUE(contains(describe(*s.config), "backward 225280 B (prefetch 0, 1 stage; Rᵀ: 4 of 16 slices in "
                                            "96 registers, 12 streamed through a ring of 4"))
      << describe(*s.config);
  s = select_tc_config(h200, FusedShape{Cell::kLstm, 1, 640, 16, DType::kBf16});
  ASSERT_TRUE(s.config) << s.reason;
  EXPECT_EQ(s.config->cluster, 16);
  EXPECT_EQ(s.config->cta_dims, 40);
  EXPECT_EQ(s.config->backward_slice_bytes, 12800);
  EXPECT_EQ(s.config->backward_stage_bytes, 18432);
  EXPECT_EQ(s.config->backward_ring_slots, 6);
  EXPECT_TRUE(s.config->backward_streams);
  EXPECT_FALSE(s.config->backward_one_stage);
  EXPECT_EQ(s.config->backward_prefetch, 1);
  EXPECT_EQ(s.config->backward_stages, 2);
  EXPECT_EQ(s.config->backward_smem_bytes, 216576);

  // LSTM 1x384 (wide: R 4·384/8 = 192 > 128): 48 warps, 12 CTAs of 4 (32
  // dims). The backward: 4 warps (128 threads), 8 k-tiles per slice, 16
  // registers a slice: 6 of the 12 slices in registers (96), 6 in shared
  // memory of 8·128·8 = 8192 B each. Two stages of 14848 B, delta tiles
  // 8704 B and received sums 2 · 11 · 16 · 40 · 4 = 56320 B: 94720 B, which
  // with the 256 static bytes leaves room for floor(137472 / 8192) = 16 >= 6
  // slices: all resident, no producer warp, prefetch 1, 94720 + 6 · 8192 =
  // 143872 B.
  s = select_tc_config(h200, FusedShape{Cell::kLstm, 1, 384, 16, DType::kBf16});
  ASSERT_TRUE(s.config) << s.reason;
  EXPECT_EQ(s.config->cluster, 12);
  EXPECT_EQ(s.config->cta_dims, 32);
  EXPECT_EQ(s.config->k_split, 2);
  EXPECT_TRUE(s.config->backward);
  EXPECT_EQ(s.config->backward_threads, 128);
  EXPECT_EQ(s.config->backward_register_slices, 6);
  EXPECT_EQ(s.config->backward_r_registers, 96);
  EXPECT_EQ(s.config->backward_shared_slices, 6);
  EXPECT_EQ(s.config->backward_slice_bytes, 8192);
  EXPECT_EQ(s.config->backward_ring_slots, 6);
  EXPECT_FALSE(s.config->backward_streams);
  EXPECT_EQ(s.config->backward_prefetch, 1);
  EXPECT_EQ(s.config->backward_smem_bytes, 143872);
  EXPECT_TRUE(contains(describe(*s.config), "Rᵀ: 6 of 12 slices in 96 registers, 6 in shared memory)"))
      << describe(*s.config);

  // The same LSTM 12x64 on an A100 (no clusters: the cap is 8, one CTA per
  // head): 8 warps, 64 dims, 256 threads, 12 CTAs; R 32.
  // Forward (5 · 16 · (4·64 + 8) + 2 · 16 · (64 + 8)) · 2 = (21120 + 2304) · 2 = 46848 B
  // (one CTA per head: no save tiles).
  // Backward stage 16 · ((6·64 + 4) · 4 + (2·64 + 8) · 2) = 16 · (1552 + 272) = 29184 B;
  // four stages 116736 + 16896 = 133632 B <= 232448 (prefetch 3) and <= the A100's 166912.
  const DeviceProps a100 = device_fixture("a100");
  s = select_tc_config(a100, FusedShape{Cell::kLstm, 12, 64, 16, DType::kBf16});
  ASSERT_TRUE(s.config) << s.reason;
  EXPECT_EQ(s.config->cta_warp_cap, 8);
  EXPECT_EQ(s.config->cluster, 1);
  EXPECT_EQ(s.config->cta_dims, 64);
  EXPECT_EQ(s.config->warps, 8);
  EXPECT_EQ(s.config->threads, 256);
  EXPECT_EQ(s.config->ctas, 12);
  EXPECT_EQ(s.config->r_registers_per_thread, 32);
  EXPECT_EQ(s.config->register_cap, 255);  // min(255, 65536 / 256 = 256)
  EXPECT_EQ(s.config->forward_smem_bytes, 46848);
  EXPECT_EQ(s.config->backward_stage_bytes, 29184);
  EXPECT_EQ(s.config->backward_smem_bytes, 133632);
  EXPECT_EQ(s.config->backward_prefetch, 3);
  EXPECT_FALSE(contains(describe(*s.config), "cluster")) << describe(*s.config);
}

// A wide head's forward hands h over by CTA slice (tc_slice_exchange) only
// where its two K parts start at a slice (an even cluster) and its k-tiles lie
// within the CTAs' slices (cta_dims a multiple of 16); its h tiles are then
// [cluster][16][cta_dims + 8], larger than the whole head's [16][D + 8].
TEST(TcTiling, WideHeadsHandHOverByCtaSliceWhereTheirKPartsStartAtASlice) {
  const DeviceProps h200 = device_fixture("h200");
  // LSTM 1x768: 16 CTAs of 48 = 3·16 dims. Its h tiles 2·16·16·(48 + 8)·2 =
  // 57344 B, not 49664 B: 222208 + 7680 = 229888 B (HandCheckedSelections).
  TcSelection s = select_tc_config(h200, FusedShape{Cell::kLstm, 1, 768, 16, DType::kBf16});
  ASSERT_TRUE(s.config) << s.reason;
  EXPECT_EQ(s.config->k_split, 2);
  EXPECT_TRUE(s.config->forward_slice_exchange);
  EXPECT_EQ(s.config->forward_smem_bytes, 229888);
  // LSTM 1x384: 12 CTAs of 32 dims, R 96 per share (all in registers, Wx 4
  // steps ahead): (5·16·(4·32 + 8) + 2·12·16·(32 + 8))·2 + partial sums
  // 4·2·4·32·8 = (10880 + 15360)·2 + 8192 = 60672 B.
  s = select_tc_config(h200, FusedShape{Cell::kLstm, 1, 384, 16, DType::kBf16});
  ASSERT_TRUE(s.config) << s.reason;
  EXPECT_TRUE(s.config->forward_slice_exchange);
  EXPECT_EQ(s.config->forward_smem_bytes, 60672);
  // LSTM 1x640: 16 CTAs of 40 dims, k-tiles across two CTAs' slices: h by
  // element, the whole head's rows. Wx 2·16·(4·40 + 8)·2 = 10752 B, h
  // 2·16·(640 + 8)·2 = 41472 B, 8 of a share's 20 k-tiles per gate in shared
  // memory 8·4·320·8 = 81920 B, partial sums 5·2·4·32·8 = 10240 B: 144384 B.
  s = select_tc_config(h200, FusedShape{Cell::kLstm, 1, 640, 16, DType::kBf16});
  ASSERT_TRUE(s.config) << s.reason;
  EXPECT_EQ(s.config->cluster, 16);
  EXPECT_EQ(s.config->cta_dims, 40);
  EXPECT_FALSE(s.config->forward_slice_exchange);
  EXPECT_EQ(s.config->forward_smem_bytes, 144384);
  EXPECT_FALSE(contains(describe(*s.config), "by CTA slice")) << describe(*s.config);
  // LSTM 1x288 (R 144 > 128: K split): 9 CTAs of 32 dims, an odd cluster, so
  // the second K part starts inside CTA 4's slice: h by element.
  // (5·16·136 + 2·16·(288 + 8))·2 + 8192 = (10880 + 9472)·2 + 8192 = 48896 B.
  s = select_tc_config(h200, FusedShape{Cell::kLstm, 1, 288, 16, DType::kBf16});
  ASSERT_TRUE(s.config) << s.reason;
  EXPECT_EQ(s.config->cluster, 9);
  EXPECT_EQ(s.config->k_split, 2);
  EXPECT_FALSE(s.config->forward_slice_exchange);
  EXPECT_EQ(s.config->forward_smem_bytes, 48896);
  // A head whose R is in registers (K not split) never does: LSTM 12x64.
  s = select_tc_config(h200, FusedShape{Cell::kLstm, 12, 64, 16, DType::kBf16});
  ASSERT_TRUE(s.config) << s.reason;
  EXPECT_FALSE(s.config->forward_slice_exchange);
}

// The kernels take the fewest CTAs whatever the device's other limits: a larger
// cluster that fits where the fewest does not is not compiled, so the case does
// not run (the model alone would pick it: cluster is merely searched fewest first).
TEST(TcTiling, ALargerClusterThatFitsIsNotTheKernels) {
  DeviceProps small = device_fixture("h200");
  small.name = "H200 with 100 KiB of shared memory per block";
  small.smem_per_block_optin = 100 * 1024;
  // GRU 128: 8 warps, one CTA (cap 8), backward four stages of
  // 16 · ((5·128 + 4) · 4 + (128 + 8) · 2) = 45568 B + 2 · 16 · (3·128 + 8) · 2 = 25088 B
  // = 207360 B > 102400. A cluster of 2 (64 dims) needs 4 · 23040 + 25088 = 117248 B,
  // still more; one of 4 (32 dims) 4 · 11776 + 25088 = 72192 B fits.
  const FusedShape shape{Cell::kGru, 1, 128, 16, DType::kBf16};
  const TcTilingModel model(small, shape);
  const SolveResult first = solve_all(model.problem(), SolveOptions{1});
  ASSERT_EQ(first.solutions.size(), 1u);
  EXPECT_EQ(model.config(first.solutions.front()).cluster, 4);
  const TcSelection s = select_tc_config(small, shape);
  EXPECT_FALSE(s.config);
  EXPECT_EQ(s.binding, "bw_smem_fits");
  EXPECT_TRUE(contains(s.reason, "the backward needs 207360 B")) << s.reason;
  ASSERT_TRUE(s.needs);
  EXPECT_EQ(s.needs->cluster, 1);
}

TEST(TcTiling, InfeasibleCasesSayWhich) {
  const DeviceProps h200 = device_fixture("h200");
  // GRU 256: a cluster of 2 CTAs of 8 warps would do, but R takes 3 gates · 2
  // groups · 256 / 8 = 192 registers per thread > 128: not compiled (kForwardCompiled).
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

  // LSTM 272: 34 warps of 8 dims; CTAs of at most 4 need 9 or more, and of
  // 1…16 only 1, 2 (17 warps each) divide 34: no cluster.
  s = select_tc_config(h200, FusedShape{Cell::kLstm, 1, 272, 16, DType::kBf16});
  ASSERT_FALSE(s.config);
  EXPECT_TRUE(is_split_label(s.binding)) << s.binding;
  EXPECT_TRUE(contains(s.reason, "head dim 272 has no cluster split: its 272 / 8 = 34 warps do not "
                                 "divide evenly into at most 16 CTAs of at most 4 warps each"))
      << s.reason;
  EXPECT_FALSE(s.needs);

  // LSTM 1024: 128 warps, wide (cap 6): 16 CTAs take at most 96.
  s = select_tc_config(h200, FusedShape{Cell::kLstm, 1, 1024, 16, DType::kBf16});
  ASSERT_FALSE(s.config);
  EXPECT_TRUE(is_split_label(s.binding)) << s.binding;
  EXPECT_TRUE(contains(s.reason, "head dim 1024 has no cluster split: its 1024 / 8 = 128 warps do not "
                                 "divide evenly into at most 16 CTAs of at most 6 warps each"))
      << s.reason;

  // GRU 240: 15 warps of 16 dims, 3 CTAs of 5, but R 3·2·240/8 = 180 > 128,
  // and an odd gate count does not split R.
  s = select_tc_config(h200, Cell::kGru, 240, 16, DType::kBf16);
  EXPECT_EQ(s.binding, "r_regs_cap");
  EXPECT_TRUE(contains(s.reason, "(an odd gate count keeps R in registers)")) << s.reason;
  ASSERT_TRUE(s.needs);
  EXPECT_EQ(s.needs->cluster, 3);
  // Elman 240: the same 3 CTAs of 5 warps, R 60: it runs.
  s = select_tc_config(h200, Cell::kElman, 240, 16, DType::kBf16);
  ASSERT_TRUE(s.config) << s.reason;
  EXPECT_EQ(s.config->cluster, 3);

  // 176 and 208: 22 and 26 warps of 8, clusters of 11 and 13 CTAs of 2 warps
  // (over sm_90's portable 8); at an odd gate count 11 and 13 warps of 16
  // dims, one per CTA, but GRU's R (132, 156 registers) exceeds the cap.
  for (int d : {176, 208}) {
    s = select_tc_config(h200, Cell::kLstm, d, 16, DType::kBf16);
    ASSERT_TRUE(s.config) << s.reason;
    EXPECT_EQ(s.config->cluster, d / 16);
    EXPECT_EQ(s.config->warps, 2);
    EXPECT_TRUE(s.config->backward);
    s = select_tc_config(h200, Cell::kGru, d, 16, DType::kBf16);
    ASSERT_FALSE(s.config);
    EXPECT_EQ(s.binding, "r_regs_cap");
  }

  // Elman 400 fits every limit (25 warps of 16 dims: a cluster of 5, R 100),
  // but no kernel is compiled for it.
  s = select_tc_config(h200, Cell::kElman, 400, 16, DType::kBf16);
  EXPECT_EQ(s.binding, "head_dim_compiled");
  EXPECT_TRUE(contains(s.reason, "head dim 400 is not compiled (the tensor-core kernels have 16, "
                                 "32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256, "
                                 "288, 320,"))
      << s.reason;
  ASSERT_TRUE(s.needs);
  EXPECT_EQ(s.needs->cluster, 5);
  s = select_tc_config(h200, Cell::kGru, 72, 16, DType::kBf16);
  EXPECT_EQ(s.binding, "head_dim_mma");
  s = select_tc_config(h200, Cell::kLstm, 64, 16, DType::kFp32);
  EXPECT_EQ(s.binding, "tensor_core_storage");
  EXPECT_TRUE(contains(s.reason, "not fp32")) << s.reason;
}

TEST(TcTiling, DevicesWithoutClustersRunWholeHeadsOnly) {
  const DeviceProps a100 = device_fixture("a100");
  ASSERT_EQ(a100.max_cluster_size, 1);
  // LSTM 96: 12 warps, more than one CTA's 8; a device with clusters splits
  // it into the fewest c with c | 12 and 12 / c <= 4: 3 (what `needs` shows:
  // the lifted model has clusters).
  TcSelection s = select_tc_config(a100, Cell::kLstm, 96, 16, DType::kBf16);
  ASSERT_FALSE(s.config);
  EXPECT_EQ(s.binding, "cluster_fits");
  EXPECT_TRUE(contains(s.reason, "head dim 96 needs a thread-block cluster of 3 CTAs (sm_90); "
                                 "this device has none"))
      << s.reason;
  ASSERT_TRUE(s.needs);
  EXPECT_EQ(s.needs->cluster, 3);
  EXPECT_EQ(s.needs->cta_dims, 32);
  // LSTM 256 takes a cluster of 8 CTAs of 4 warps there; with the cluster
  // lifted, what the H200 runs: 103936 B backward.
  s = select_tc_config(a100, Cell::kLstm, 256, 16, DType::kBf16);
  ASSERT_FALSE(s.config);
  EXPECT_EQ(s.binding, "cluster_fits");
  EXPECT_TRUE(contains(s.reason, "head dim 256 needs a thread-block cluster of 8 CTAs (sm_90); "
                                 "this device has none"))
      << s.reason;
  ASSERT_TRUE(s.needs);
  EXPECT_EQ(s.needs->cluster, 8);
  EXPECT_EQ(s.needs->backward_smem_bytes, 103936);
  // Elman 144: 9 warps of 16 dims, a cluster of 3 (cap 8).
  s = select_tc_config(a100, Cell::kElman, 144, 16, DType::kBf16);
  ASSERT_FALSE(s.config);
  EXPECT_EQ(s.binding, "cluster_fits");
  EXPECT_TRUE(contains(s.reason, "a thread-block cluster of 3 CTAs")) << s.reason;
  // LSTM 272 splits on no device: the split with clusters is what is reported.
  s = select_tc_config(a100, Cell::kLstm, 272, 16, DType::kBf16);
  ASSERT_FALSE(s.config);
  EXPECT_TRUE(is_split_label(s.binding)) << s.binding;
  EXPECT_TRUE(contains(s.reason, "at most 16 CTAs of at most 4 warps each")) << s.reason;
  EXPECT_TRUE(contains(s.reason, "this device has none")) << s.reason;
  // Heads of at most 8 warps run there whole, LSTM 64 as one CTA of 8 warps.
  EXPECT_TRUE(select_tc_config(a100, Cell::kElman, 128, 16, DType::kBf16).config);
  s = select_tc_config(a100, Cell::kLstm, 64, 16, DType::kBf16);
  ASSERT_TRUE(s.config) << s.reason;
  EXPECT_EQ(s.config->cluster, 1);
  EXPECT_EQ(s.config->warps, 8);
}

TEST(TcTiling, A100RejectsWhatDoesNotFitItsSharedMemory) {
  const DeviceProps a100 = device_fixture("a100");
  ASSERT_EQ(a100.smem_per_block_optin, 163 * 1024);
  // GRU 128 (8 warps, one CTA): the backward's 207360 B (laid out for 227 KiB)
  // exceed 166912 B; and sLSTM 64 (one CTA of 8 warps without clusters): four
  // stages of 16 · ((8·64 + 4) · 4 + (4·64 + 8) · 2) = 41472 B + 16896 B = 182784 B.
  TcSelection s = select_tc_config(a100, Cell::kGru, 128, 16, DType::kBf16);
  ASSERT_FALSE(s.config);
  EXPECT_EQ(s.binding, "bw_smem_fits");
  EXPECT_TRUE(contains(s.reason, "the backward needs 207360 B")) << s.reason;
  EXPECT_TRUE(contains(s.reason, "166912 B")) << s.reason;
  s = select_tc_config(a100, Cell::kSlstm, 64, 16, DType::kFp16);
  EXPECT_FALSE(s.config);
  EXPECT_EQ(s.binding, "bw_smem_fits");
  EXPECT_TRUE(contains(s.reason, "the backward needs 182784 B")) << s.reason;
  ASSERT_TRUE(s.needs);
  EXPECT_EQ(s.needs->cluster, 1);  // the A100's tiling, not the H200's 2 CTAs of 4 warps
  // What fits runs: Elman 128 (92672 B), LSTM 64 (133632 B), GRU 64 (104960 B).
  EXPECT_TRUE(select_tc_config(a100, Cell::kElman, 128, 16, DType::kBf16).config);
  EXPECT_TRUE(select_tc_config(a100, Cell::kLstm, 64, 16, DType::kBf16).config);
  EXPECT_TRUE(select_tc_config(a100, Cell::kGru, 64, 16, DType::kBf16).config);
}

}  // namespace
}  // namespace flashrnn::tune

// How the tensor-core fused kernels (tc_forward.cuh, tc_backward.cuh) tile one
// head. No CUDA, no torch: the launchers, the backend and the tests share it.
//
// A CTA runs the head dims [d0, d0 + kCtaDims) of one head for 16 batch rows
// (the MMA's M) through all T steps. A small head is one CTA (d0 = 0); a
// larger one is split over a thread-block cluster of kCluster CTAs
// (tc_cluster_size), each keeping its dims' rows of R, and every step each
// CTA writes its slice of h_t (backward: of δ(R h)) into every CTA's shared
// tile through distributed shared memory (sm_90, cluster_exchange.cuh).
// Warp w owns the dims d0 + [8·G_w·w, 8·G_w·(w+1)) where G_w = kDGroupsPerWarp
// groups of 8, for every gate, so each thread ends a step's MMA holding all
// gate pre-activations of its own (batch row, head dim) elements: 2 rows ×
// 2 dims per group of 8. An odd gate count takes two groups per warp so a
// warp's rows of R form whole 16-row MMA tiles.
#pragma once

#include <cstdint>
#include <type_traits>

namespace flashrnn::fused {

constexpr int kTcRows = 16;  // batch rows per CTA

// How many warps a CTA takes. At most kTcMaxCtaWarps; on a device with
// clusters an LSTM or sLSTM head is split further, into CTAs of at most
// kTcSplitCtaWarps: half the warps per SM halve each scheduler's instruction
// stream per step (12x64 LSTM forward+backward 4.04 -> 2.94 ms on an H100,
// docs/kernels.md v9). One CTA of 16 warps was slower still: its registers are
// capped at 128 per thread, and R alone takes 64 at 128 dims.
constexpr int kTcMaxCtaWarps = 8;
constexpr int kTcSplitCtaWarps = 4;
constexpr int kTcMaxCluster = 8;  // the portable cluster size of sm_90
// R's B fragments may take at most this many of a thread's 255 registers: the
// step needs the rest (accumulators, the cell, addresses) to run without spilling.
constexpr int kTcMaxRRegisters = 128;

// Warps a whole head takes: one per 8·G_w head dims (G_w = 2 for an odd gate count).
constexpr int tc_head_warps(int gates, int head_dim) {
  return head_dim / (8 * (gates % 2 == 0 ? 1 : 2));
}

// The most warps a CTA of this cell takes on a device with or without clusters.
constexpr int tc_cta_warp_cap(int gates, bool clusters) {
  return clusters && gates % 2 == 0 ? kTcSplitCtaWarps : kTcMaxCtaWarps;
}

// CTAs per head: the fewest (1…8, 1 only without clusters) that split the
// head's warps evenly into at most tc_cta_warp_cap each; 0 when none does
// (e.g. 176 = 22 groups of 8, or any head over 8 warps without clusters).
constexpr int tc_cluster_size(int gates, int head_dim, bool clusters) {
  const int warps = tc_head_warps(gates, head_dim), cap = tc_cta_warp_cap(gates, clusters);
  for (int c = 1; c <= (clusters ? kTcMaxCluster : 1); ++c)
    if (warps % c == 0 && warps / c <= cap) return c;
  return 0;
}

// R's B fragments per thread: G gates × G_w groups × D/16 k-tiles × 2
// registers, whatever the cluster (a warp keeps its dims' rows over the whole K).
constexpr int tc_r_registers(int gates, int head_dim) {
  return gates * (gates % 2 == 0 ? 1 : 2) * head_dim / 8;
}

// Whether fused/instances/ compiles kernels for a (gates, head dim): R within
// the register cap (the cluster is tc_cluster_size's question).
constexpr bool tc_compiled(int gates, int head_dim) {
  return tc_r_registers(gates, head_dim) <= kTcMaxRRegisters;
}

// The tiling of a head over kCluster CTAs (tc_cluster_size says which the
// kernels use; fused/instances/ compiles both of a head dim's).
template <int kGates, int kHeadDim, int kClusterSize>
struct TcTiling {
  static_assert(kClusterSize >= 1 && kHeadDim % 16 == 0, "a cluster of CTAs; a multiple of 16");
  static constexpr int kCluster = kClusterSize;
  static constexpr int kDGroupsPerWarp = kGates % 2 == 0 ? 1 : 2;
  static constexpr int kCtaDims = kHeadDim / kCluster;
  static constexpr int kWarps = kCtaDims / (8 * kDGroupsPerWarp);
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kRRegisters = tc_r_registers(kGates, kHeadDim);
  // Whether fused/instances/ compiles kernels for it (the tuner's model agrees: tests/tune).
  static constexpr bool kCompiled = tc_compiled(kGates, kHeadDim);
  static_assert(kThreads <= 1024, "at most 32 warps per CTA");
};

// Calls fn(std::integral_constant<int, C>{}) for the compiled cluster C of a
// (gates, head dim) equal to `cluster` (with clusters or without: the two
// tilings the kernels are compiled for) and returns its result; `otherwise`
// when `cluster` is neither.
template <int kGates, int kHeadDim, class Fn, class R>
R with_tc_cluster(int cluster, Fn&& fn, R otherwise) {
  constexpr int kWith = tc_cluster_size(kGates, kHeadDim, true);
  constexpr int kWithout = tc_cluster_size(kGates, kHeadDim, false);
  if constexpr (kWith > 0) {
    if (cluster == kWith) return fn(std::integral_constant<int, kWith>{});
  }
  if constexpr (kWithout > 0 && kWithout != kWith) {
    if (cluster == kWithout) return fn(std::integral_constant<int, kWithout>{});
  }
  return otherwise;
}

// Shared memory the kernels are laid out for: an H100/H200's opt-in maximum
// per block. Devices with less (A100: 163 KB) run the cases that fit.
constexpr int64_t kTcSmemBudget = 227 * 1024;

// The forward's shared memory: a ring of Wx stages and two h tiles.
template <class Cell, class S, int D, int kCluster>
struct TcForward {
  using Tiling = TcTiling<Cell::kGates, D, kCluster>;
  static constexpr int kGates = Cell::kGates, kGroups = Tiling::kDGroupsPerWarp;
  static constexpr int kPrefetch = 4, kStages = kPrefetch + 1;
  // Rows padded by 16 bytes so the 8 rows a warp reads at once hit different banks.
  static constexpr int kCtaDims = Tiling::kCtaDims;
  static constexpr int kWxPitch = kGates * kCtaDims + 8;  // elements per batch row of a stage (this CTA's dims)
  static constexpr int kHPitch = D + 8;                   // h of the whole head
  static constexpr int64_t smem_bytes() {
    return int64_t(kStages * kTcRows * kWxPitch + 2 * kTcRows * kHPitch) * int64_t(sizeof(S));
  }
};

// The backward's shared memory: a ring of stages, each [16][cache C·Dc,
// states(t-1) S·Dc (only the slots the cell's backward reads are filled)]
// floats then [16][S·Dc] storage values (the external gradient of states(t))
// of the CTA's Dc = kCtaDims dims, and two δ(R h) tiles of the whole head. As
// many stages in flight as fit.
template <class Cell, class S, int D, int kCluster>
struct TcBackward {
  using Tiling = TcTiling<Cell::kGates, D, kCluster>;
  static constexpr int kGates = Cell::kGates, kGroups = Tiling::kDGroupsPerWarp;
  static constexpr int kCtaDims = Tiling::kCtaDims;
  static constexpr int kFloatPitch = (Cell::kCache + Cell::kStates) * kCtaDims + 4;
  static constexpr int kGradPitch = Cell::kStates * kCtaDims + 8;
  static constexpr int kDeltaPitch = kGates * D + 8;
  static constexpr int64_t stage_bytes() {
    return int64_t(kTcRows) * (kFloatPitch * 4 + kGradPitch * int64_t(sizeof(S)));
  }
  static constexpr int64_t bytes_with(int stages) {
    return stages * stage_bytes() + 2 * kTcRows * kDeltaPitch * int64_t(sizeof(S));
  }
  static constexpr int kPrefetch = bytes_with(4) <= kTcSmemBudget   ? 3
                                   : bytes_with(3) <= kTcSmemBudget ? 2
                                                                    : 1;
  static constexpr int kStages = kPrefetch + 1;
  static constexpr int64_t smem_bytes() { return bytes_with(kStages); }
};

// Head dims the tensor-core kernels are compiled for (fused/instances/):
// every multiple of 16 up to 256 but 176 and 208, which no cluster splits (nor
// 240 at 4 gates: 30 warps in CTAs of at most 4).
inline constexpr int kTcHeadDims[] = {16, 32, 48, 64, 80, 96, 112, 128, 144, 160, 192, 224, 240, 256};

inline bool tc_head_dim_compiled(int64_t d) {
  for (int v : kTcHeadDims)
    if (v == d) return true;
  return false;
}

}  // namespace flashrnn::fused

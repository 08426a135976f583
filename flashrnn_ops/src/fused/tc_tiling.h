// How the tensor-core fused kernels (tc_forward.cuh, tc_backward.cuh) tile one
// head. No CUDA, no torch: the launchers, the backend and the tests share it.
//
// A CTA runs one head for 16 batch rows (the MMA's M) through all T steps.
// Warp w owns the head dims [8·G_w·w, 8·G_w·(w+1)) where G_w = kDGroupsPerWarp
// groups of 8, for every gate, so each thread ends a step's MMA holding all
// gate pre-activations of its own (batch row, head dim) elements: 2 rows ×
// 2 dims per group of 8. An odd gate count takes two groups per warp so a
// warp's rows of R form whole 16-row MMA tiles.
#pragma once

#include <cstdint>

namespace flashrnn::fused {

constexpr int kTcRows = 16;  // batch rows per CTA

template <int kGates, int kHeadDim>
struct TcTiling {
  static constexpr int kDGroupsPerWarp = kGates % 2 == 0 ? 1 : 2;
  static constexpr int kWarps = kHeadDim / (8 * kDGroupsPerWarp);
  static constexpr int kThreads = 32 * kWarps;
  static_assert(kHeadDim % (8 * kDGroupsPerWarp) == 0 && kHeadDim % 16 == 0,
                "the head dim must be a multiple of 16");
  static_assert(kThreads <= 1024, "one CTA per head: at most 32 warps");
};

// Shared memory the kernels are laid out for: an H100/H200's opt-in maximum
// per block. Devices with less (A100: 163 KB) run the cases that fit.
constexpr int64_t kTcSmemBudget = 227 * 1024;

// The forward's shared memory: a ring of Wx stages and two h tiles.
template <class Cell, class S, int D>
struct TcForward {
  using Tiling = TcTiling<Cell::kGates, D>;
  static constexpr int kGates = Cell::kGates, kGroups = Tiling::kDGroupsPerWarp;
  static constexpr int kPrefetch = 4, kStages = kPrefetch + 1;
  // Rows padded by 16 bytes so the 8 rows a warp reads at once hit different banks.
  static constexpr int kWxPitch = kGates * D + 8;  // elements per batch row of a stage
  static constexpr int kHPitch = D + 8;
  static constexpr int64_t smem_bytes() {
    return int64_t(kStages * kTcRows * kWxPitch + 2 * kTcRows * kHPitch) * int64_t(sizeof(S));
  }
};

// The backward's shared memory: a ring of stages, each [16][cache C·D,
// states(t-1) S·D] floats then [16][S·D] storage values (the external gradient
// of states(t)), and two δ(R h) tiles. As many stages in flight as fit.
template <class Cell, class S, int D>
struct TcBackward {
  using Tiling = TcTiling<Cell::kGates, D>;
  static constexpr int kGates = Cell::kGates, kGroups = Tiling::kDGroupsPerWarp;
  static constexpr int kFloatPitch = (Cell::kCache + Cell::kStates) * D + 4;
  static constexpr int kGradPitch = Cell::kStates * D + 8;
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

// Head dims the tensor-core kernels are compiled for (fused/instances/).
inline constexpr int kTcHeadDims[] = {16, 32, 64, 128};

inline bool tc_head_dim_compiled(int64_t d) {
  for (int v : kTcHeadDims)
    if (v == d) return true;
  return false;
}

}  // namespace flashrnn::fused

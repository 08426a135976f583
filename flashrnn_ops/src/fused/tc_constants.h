// The tensor-core fused kernels' compile-time caps and the head dims they are
// compiled for: the inputs of their tiling. No rule here: how a head is tiled
// follows from these by the constraints of flashrnn_ops/tune/models/
// tc_tiling.txt, solved when the library is built (tc_tiling.h reads the
// solutions). No CUDA, no torch: the tuner, the kernels and the tests share it.
#pragma once

#include <cstdint>

namespace flashrnn::fused {

constexpr int kTcRows = 16;  // batch rows per CTA (the MMA's M)

// How many warps a CTA takes for its groups of dims. At most kTcMaxCtaWarps;
// on a device with clusters an LSTM or sLSTM head is split further, into CTAs
// of at most kTcSplitCtaWarps: half the warps per SM halve each scheduler's
// instruction stream per step (12x64 LSTM forward+backward on an H100:
// 2.94 ms with CTAs of 4 warps, 4.04 with 8) — or kTcWideCtaWarps where the
// head has more warps than the largest cluster of such CTAs holds (over 64:
// 768 dims are 96 warps). One CTA of 16 warps is slower still: its registers
// are capped at 128 per thread, and R alone takes 64 at 128 dims.
constexpr int kTcMaxCtaWarps = 8;
constexpr int kTcSplitCtaWarps = 4;
constexpr int kTcWideCtaWarps = 6;
constexpr int kTcMaxCluster = 16;  // sm_90's largest cluster (over its portable 8 by opting in: launch_persistent)
// R's B fragments may take at most this many of a thread's 255 registers: the
// step needs the rest (accumulators, the cell, addresses) to run without spilling.
constexpr int kTcMaxRRegisters = 128;
// An LSTM or sLSTM head whose R takes more (a wide head; GRU and Elman heads
// stay within the cap) runs the forward with K split over two warps per group
// of dims (twice the threads, whose registers are capped at 168 at 12 warps),
// each keeping the fragments of its first k-tiles in this many registers and
// the rest in shared memory, which it reads every step (1x768: 12 of its 24
// k-tiles per gate).
constexpr int kTcSplitRRegisters = 96;
// The backward of a wide head keeps Rᵀ's fragments for its first CTA slices
// in at most this many registers (1x768: 4 of 16 slices) and the rest in
// shared memory: resident where they fit beside the step's buffers (up to 512
// dims), else streamed from a packed copy in global memory (L2) through a
// ring of at most kTcMaxRing slices by a producer warp (TcBackward), beside
// two stages unless they leave the ring fewer than kTcMinTwoStageRing slots.
constexpr int kTcWideBackwardRRegisters = 96;
constexpr int kTcMaxRing = 6;
constexpr int kTcMinTwoStageRing = 3;
// The backward fetches at most this many steps ahead (four stages), and its
// static shared memory (the mbarriers) takes at most this many bytes beside
// the dynamic (TcBackward).
constexpr int kTcMaxBackwardPrefetch = 3;
constexpr int64_t kTcBackwardStaticBytes = 256;
// Shared memory per CTA the kernels are laid out for: an H100/H200's opt-in
// maximum per block. Devices with less, such as an A100's 163 KB, run the
// cases that fit.
constexpr int64_t kTcSmemBudget = 227 * 1024;

// Head dims the tensor-core kernels are compiled for (fused/instances/, from
// scripts/generate_fused_instances.py; the tuner's head_dim_is_compiled): every
// multiple of 16 up to 256, and over it those an LSTM or sLSTM head can be
// split into (at most 16 CTAs; R partly in shared memory). The others over
// 256 (272, 304, ...) have no even split.
inline constexpr int kTcHeadDims[] = {16,  32,  48,  64,  80,  96,  112, 128, 144, 160, 176, 192, 208, 224, 240,
                                      256, 288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 672, 768};

constexpr bool tc_head_dim_compiled(int64_t d) {
  for (int v : kTcHeadDims)
    if (v == d) return true;
  return false;
}

// One solution of tc_tiling.txt: how the kernels tile a head of `head_dim`
// dims of a cell with `gates`, `states` and `cache` on devices with or without
// thread-block clusters (the fields are the model's variables; tc_config.h
// says what each means). The build solves the model for every cell and
// compiled head dim (tune/tools/tc_tiling_table_main.cpp) into
// kTcTilingTable (tc_tiling_table.h, generated); a (cell, head dim, clusters)
// the kernels do not run has no row.
struct TcTilingRow {
  int gates, states, cache, head_dim;
  bool clusters;
  int cluster, cta_dims, d_groups, dim_warps, k_split, threads;
  int r_registers, r_register_ktiles, r_shared_ktiles;
  int forward_prefetch;
  bool slice_exchange, save_tiles;
  int64_t forward_smem_bytes;  // the recording forward's, save tiles included
  int backward_threads, backward_prefetch, backward_register_slices, backward_shared_slices, backward_ring_slots;
  bool backward_streams, backward_one_stage;
  int64_t backward_stage_bytes, backward_slice_bytes, backward_smem_bytes;
};

}  // namespace flashrnn::fused

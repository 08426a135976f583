// How the tensor-core fused kernels (tc_forward.cuh, tc_backward.cuh) tile one
// head. No CUDA, no torch: the launchers, the backend, the tests and the
// tuner share it. The tuner's model of this tiling (flashrnn_ops/tune/models/
// tc_tiling.txt) gets every constant below from here (tune/src/tc_model.cpp).
//
// A CTA runs the head dims [d0, d0 + kCtaDims) of one head for 16 batch rows
// (the MMA's M) through all T steps. A small head is one CTA (d0 = 0); a
// larger one is split over a thread-block cluster of kCluster CTAs
// (tc_cluster_size), each keeping its dims' rows of R, and every step each
// CTA writes its slice of h_t into every CTA's shared tile (backward: the
// partial sums of δh owed to each other CTA into that CTA's) through
// distributed shared memory (sm_90, cluster_exchange.cuh).
// Warp w owns the dims d0 + [8·G_w·w, 8·G_w·(w+1)) where G_w = kDGroupsPerWarp
// groups of 8, for every gate, so each thread ends a step's MMA holding all
// gate pre-activations of its own (batch row, head dim) elements: 2 rows ×
// 2 dims per group of 8. An odd gate count takes two groups per warp so a
// warp's rows of R form whole 16-row MMA tiles.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "cells/saved_states.h"

namespace flashrnn::fused {

constexpr int kTcRows = 16;  // batch rows per CTA

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
// of dims (tc_k_split; twice the threads, whose registers are capped at 168 at
// 12 warps), each keeping the fragments of its first k-tiles in this many
// registers and the rest in shared memory, which it reads every step (1x768:
// 12 of its 24 k-tiles per gate).
constexpr int kTcSplitRRegisters = 96;
// The backward of a wide head keeps Rᵀ's fragments for its first CTA slices
// in at most this many registers (1x768: 4 of 16 slices) and the rest in
// shared memory: resident where they fit beside the step's buffers (up to 512
// dims), else streamed from a packed copy in global memory (L2) through a
// ring of kTcMaxRing slices by a producer warp (TcBackward).
constexpr int kTcWideBackwardRRegisters = 96;
constexpr int kTcMaxRing = 6;
constexpr int kTcMinTwoStageRing = 3;
// The backward fetches at most this many steps ahead (four stages), and its
// static shared memory (the mbarriers) takes at most this many bytes beside
// the dynamic (TcBackward).
constexpr int kTcMaxBackwardPrefetch = 3;
constexpr int64_t kTcBackwardStaticBytes = 256;

// Warps a whole head takes for its groups of dims: one per 8·G_w head dims
// (G_w = 2 for an odd gate count).
constexpr int tc_head_warps(int gates, int head_dim) {
  return head_dim / (8 * (gates % 2 == 0 ? 1 : 2));
}

// The most warps for groups of dims a CTA of this case takes on a device with
// or without clusters.
constexpr int tc_cta_warp_cap(int gates, int head_dim, bool clusters) {
  if (!clusters || gates % 2 != 0) return kTcMaxCtaWarps;
  return tc_head_warps(gates, head_dim) <= kTcSplitCtaWarps * kTcMaxCluster ? kTcSplitCtaWarps : kTcWideCtaWarps;
}

// R's B fragments per thread without a split of K: G gates × G_w groups × D/16
// k-tiles × 2 registers, whatever the cluster (a warp keeps its dims' rows over
// the whole K).
constexpr int tc_r_registers(int gates, int head_dim) {
  return gates * (gates % 2 == 0 ? 1 : 2) * head_dim / 8;
}

// Warps per group of dims, each multiplying its share of K: 2 for an LSTM or
// sLSTM head whose R exceeds kTcMaxRRegisters and whose D/16 k-tiles split
// evenly, else 1.
constexpr int tc_k_split(int gates, int head_dim) {
  return tc_r_registers(gates, head_dim) > kTcMaxRRegisters && gates % 2 == 0 && head_dim % 32 == 0 ? 2 : 1;
}

// Of a warp's k-tiles per gate (D/16 over the K split), how many the forward
// keeps in shared memory: those past kTcSplitRRegisters' worth where K is split.
constexpr int tc_shared_r_ktiles(int gates, int head_dim) {
  const int k_tiles = head_dim / 16 / tc_k_split(gates, head_dim);
  const int in_registers = kTcSplitRRegisters / (2 * gates);
  return tc_k_split(gates, head_dim) == 1 || k_tiles <= in_registers ? 0 : k_tiles - in_registers;
}

// Shared memory per CTA, all in bytes: what the kernels are laid out for (an
// H100/H200's opt-in maximum per block; devices with less, such as an A100's
// 163 KB, run the cases that fit), and the forward's with 2-byte elements
// (TcForward): a ring of Wx stages of the CTA's dims (one step ahead where R
// is partly in shared memory, a step being long enough to hide its copy,
// else four), two h tiles of the whole head (tc_h_tile_elements), R's shared
// k-tiles, and where K is split the partial sums the two warps of a group of
// dims hand each other.
constexpr int64_t kTcSmemBudget = 227 * 1024;
constexpr int tc_forward_prefetch(int gates, int head_dim) { return tc_shared_r_ktiles(gates, head_dim) > 0 ? 1 : 4; }

// Whether a head's forward hands h over by CTA slice (slice_exchange.cuh: one
// bulk copy of a CTA's slice to each peer, one mbarrier per source CTA, each
// slice multiplied as soon as it is in): a head with K split (a wide head)
// whose k-tiles lie within the CTAs' slices (cta_dims a multiple of 16) and
// whose two K parts start at a slice (an even cluster). 1x768 on one H100:
// 2.62-2.65 us a step by slice, 3.21-3.33 by st.async, in the step's skeleton
// (experiments/flashbench/step_floor_probe.cu;
// experiments/results/kernel_probes/v17_step_floor_probe_H100_run{1..5}.json).
// Other heads st.async each element to every CTA.
constexpr bool tc_slice_exchange(int gates, int head_dim, int cluster) {
  return tc_k_split(gates, head_dim) == 2 && cluster % 2 == 0 && head_dim / cluster % 16 == 0;
}
// The elements of one h tile: 16 rows of the whole head, D + 8 each; by CTA
// slice 16 rows of cta_dims + 8 per CTA of the cluster (a slice contiguous,
// its rows 16 bytes apart mod 128 as the whole head's are: ldmatrix reads 8
// rows without bank conflicts).
constexpr int64_t tc_h_tile_elements(int gates, int head_dim, int cluster) {
  return tc_slice_exchange(gates, head_dim, cluster) ? int64_t(cluster) * kTcRows * (head_dim / cluster + 8)
                                                     : int64_t(kTcRows) * (head_dim + 8);
}
constexpr int64_t tc_forward_smem_bytes(int gates, int head_dim, int cluster) {
  const int cta_dims = head_dim / cluster, groups = gates % 2 == 0 ? 1 : 2, k_split = tc_k_split(gates, head_dim);
  const int dim_warps = cta_dims / (8 * groups), threads = 32 * dim_warps * k_split;
  const int64_t wx_stages = int64_t(tc_forward_prefetch(gates, head_dim) + 1) * kTcRows * (gates * cta_dims + 8) * 2;
  const int64_t h_tiles = 2 * tc_h_tile_elements(gates, head_dim, cluster) * 2;
  const int64_t r_part = int64_t(tc_shared_r_ktiles(gates, head_dim)) * groups * gates * threads * 8;
  const int64_t partials = k_split > 1 ? int64_t(dim_warps) * k_split * groups * gates * 32 * 8 : 0;
  return wx_stages + h_tiles + r_part + partials;
}

// CTAs per head: the fewest (1…16, 1 only without clusters) that split the
// head's warps evenly into at most tc_cta_warp_cap each and whose forward's
// shared memory fits kTcSmemBudget; 0 when none does (e.g. 272 = 34 groups of
// 8, or any head over 8 warps without clusters).
constexpr int tc_cluster_size(int gates, int head_dim, bool clusters) {
  const int warps = tc_head_warps(gates, head_dim), cap = tc_cta_warp_cap(gates, head_dim, clusters);
  for (int c = 1; c <= (clusters ? kTcMaxCluster : 1); ++c)
    if (warps % c == 0 && warps / c <= cap && tc_forward_smem_bytes(gates, head_dim, c) <= kTcSmemBudget) return c;
  return 0;
}

// Whether a device runs the tiling over `cluster` CTAs: the one tc_cluster_size
// gives with clusters (sm_90 and later always have them) or without (older).
constexpr bool tc_tiling_runs(int gates, int head_dim, int cluster, bool clusters) {
  return cluster == tc_cluster_size(gates, head_dim, clusters);
}

// Whether fused/instances/ compiles the forward kernel for a (gates, head dim):
// R within the register cap, or split with K (whether the shared memory fits
// the device is the launcher's and the tuner's question, the cluster
// tc_cluster_size's).
constexpr bool tc_forward_compiled(int gates, int head_dim) {
  return tc_r_registers(gates, head_dim) <= kTcMaxRRegisters || tc_k_split(gates, head_dim) > 1;
}

// Whether R's fragments exceed the register cap: a wide head (tc_k_split).
constexpr bool tc_wide(int gates, int head_dim) { return tc_r_registers(gates, head_dim) > kTcMaxRRegisters; }

// Whether fused/instances/ compiles the backward kernel: wherever the forward
// is (a wide head's with Rᵀ partly in shared memory; TcBackward checks that
// its layout fits).
constexpr bool tc_backward_compiled(int gates, int head_dim) { return tc_forward_compiled(gates, head_dim); }

// The state slots a cell's backward reads (Cell::kStatesReadBack, bit s): only
// those are saved by the recording forward and copied into the stages.
using cells::nth_read_state;
using cells::read_state_count;

// 16-byte copies per thread of `chunks` chunks over `threads` threads (the
// last one none on some threads where they do not divide).
constexpr int copies_per_thread(int chunks, int threads) { return (chunks + threads - 1) / threads; }

// The tiling of a head over kCluster CTAs (tc_cluster_size says which the
// kernels use; fused/instances/ compiles both of a head dim's).
template <int kGates, int kHeadDim, int kClusterSize>
struct TcTiling {
  static_assert(kClusterSize >= 1 && kHeadDim % 16 == 0, "a cluster of CTAs; a multiple of 16");
  static constexpr int kCluster = kClusterSize;
  static constexpr int kDGroupsPerWarp = kGates % 2 == 0 ? 1 : 2;
  static constexpr int kCtaDims = kHeadDim / kCluster;
  static constexpr int kDimWarps = kCtaDims / (8 * kDGroupsPerWarp);  // warps per share of K
  static constexpr int kKSplit = tc_k_split(kGates, kHeadDim);        // shares of K
  static constexpr int kWarps = kDimWarps * kKSplit;
  static constexpr int kThreads = 32 * kWarps;
  // R's registers per thread (its share of K), of which the forward keeps the
  // first kRegisterRKTiles k-tiles per (gate, group) in registers and the
  // other kSharedRKTiles in shared memory.
  static constexpr int kRRegisters = tc_r_registers(kGates, kHeadDim) / kKSplit;
  static constexpr int kSharedRKTiles = tc_shared_r_ktiles(kGates, kHeadDim);
  static constexpr int kRegisterRKTiles = kHeadDim / 16 / kKSplit - kSharedRKTiles;
  // Whether fused/instances/ compiles the kernels (the tuner's model agrees: tests/tune).
  static constexpr bool kForwardCompiled = tc_forward_compiled(kGates, kHeadDim);
  static constexpr bool kBackwardCompiled = tc_backward_compiled(kGates, kHeadDim);
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

// The forward's shared memory: what tc_forward_smem_bytes counts (a ring of Wx
// stages, two h tiles, R's shared k-tiles, the partial sums of a split K) and,
// for an LSTM or sLSTM head split over a cluster whose R is in registers, two
// save tiles: a step's states (S slots) and, where a backward follows, its
// cache (C) and the h fed to the next step, [S (+ C + 1)][16][Dc + 8] floats
// each, which the next step copies to global memory 16 bytes a store once it
// has published its h (a thread's own values are 8 rows of 4 or 8 bytes each
// per store; LSTM 3x256's recording forward on one H200: 1.24 ms through the
// tiles, 1.42 from registers). A launch asks for the tiles its kernel uses
// (the inference forward's are smaller: sLSTM at B = 256 keeps its CTAs per
// SM). They are not in the cluster's choice (tc_cluster_size): with them the
// forward still fits kTcSmemBudget (static_assert below).
template <class Cell, class S, int D, int kCluster>
struct TcForward {
  using Tiling = TcTiling<Cell::kGates, D, kCluster>;
  static constexpr int kGates = Cell::kGates, kGroups = Tiling::kDGroupsPerWarp;
  static constexpr int kPrefetch = tc_forward_prefetch(kGates, D), kStages = kPrefetch + 1;
  // Rows padded by 16 bytes so the 8 rows a warp reads at once hit different banks.
  static constexpr int kCtaDims = Tiling::kCtaDims;
  static constexpr int kWxPitch = kGates * kCtaDims + 8;  // elements per batch row of a stage (this CTA's dims)
  static constexpr int kHPitch = D + 8;                   // h of the whole head
  // Or h by CTA slice (tc_slice_exchange): [source CTA][16][kSlicePitch].
  static constexpr bool kSliceExchange = tc_slice_exchange(kGates, D, kCluster);
  static constexpr int kSlicePitch = kCtaDims + 8, kSliceElements = kTcRows * kSlicePitch;
  static constexpr int64_t kHTileElements = tc_h_tile_elements(kGates, D, kCluster);
  // Where h element (row, k) lies in an h tile.
  static constexpr int h_offset(int row, int k) {
    return kSliceExchange ? k / kCtaDims * kSliceElements + row * kSlicePitch + k % kCtaDims : row * kHPitch + k;
  }
  // R's shared k-tiles as B fragments, [k-tile][group][gate][thread] of 8 bytes:
  // a warp reads 256 contiguous bytes per fragment.
  static constexpr int64_t kSharedRBytes = int64_t(Tiling::kSharedRKTiles) * kGroups * kGates * Tiling::kThreads * 8;
  // Where K is split: [dim warp][share][group][gate][lane] float2 of partial sums.
  static constexpr int64_t kPartialBytes =
      Tiling::kKSplit > 1 ? int64_t(Tiling::kDimWarps) * Tiling::kKSplit * kGroups * kGates * 32 * 8 : 0;
  static constexpr int64_t cluster_counted_bytes() {
    return (kStages * kTcRows * kWxPitch + 2 * kHTileElements) * int64_t(sizeof(S)) + kSharedRBytes + kPartialBytes;
  }
  static_assert(sizeof(S) != 2 || cluster_counted_bytes() == tc_forward_smem_bytes(kGates, D, kCluster),
                "the layout tc_cluster_size counts");
  // The save tiles (rows padded by 8 floats: a warp's 8-byte stores of 8 rows take 2 wavefronts).
  static constexpr bool kSaveTile = kGates % 2 == 0 && !tc_wide(kGates, D) && kCluster > 1;
  static constexpr int save_slots(bool saves) { return Cell::kStates + (saves ? Cell::kCache + 1 : 0); }
  static constexpr int kSavePitch = kCtaDims + 8;
  static constexpr int64_t save_tile_bytes(bool saves) {
    return kSaveTile ? 2 * int64_t(save_slots(saves)) * kTcRows * kSavePitch * 4 : 0;
  }
  static constexpr int64_t kSaveTileBytes = save_tile_bytes(true);  // the recording forward's, the most
  static constexpr int64_t smem_bytes(bool saves) { return cluster_counted_bytes() + save_tile_bytes(saves); }
  static constexpr int64_t smem_bytes() { return smem_bytes(true); }  // the most
  static_assert(smem_bytes() <= kTcSmemBudget, "the save tiles fit beside the rest");
};

// The backward's shared memory: a ring of stages, each [16][cache C·Dc,
// states(t-1) S·Dc (only the slots the cell's backward reads are filled)]
// floats then [16][S·Dc] storage values (the external gradient of states(t))
// of the CTA's Dc = kCtaDims dims; two δ(R h) tiles of the CTA's dims,
// [16][G·Dc + 8]; and in a cluster two tiles of the partial sums of δh the
// other CTAs send this one, [Q - 1][16][Dc + 8] floats (rows padded by 8 floats: a
// half warp's 8-byte loads of 4 rows hit different banks). As many stages in
// flight as fit.
//
// A wide head (tc_wide: Rᵀ's fragments, Q·G·Dc/8 per thread, over the
// register cap) keeps those of its first kRegisterSlices CTA slices (the
// partial sums owed to CTAs 0, 1, ...) in registers and each other slice's,
// [k-tile][thread] of 8 bytes (kSliceBytes), in shared memory after the
// stages: all of them where they fit beside two stages (kResident: up to 512
// dims, each thread writes its own once), else a ring of kRingSlots slices
// that a producer warp (kStreams: 576 dims and over) fills from a packed copy
// in global memory (tc_pack_streamed_r_kernel) with bulk copies, slice after
// slice and step after step (1x768: 12 slices of 18 KiB a step; alone, that
// stream takes 1.85 us a step on one H100 with a ring of 3, 4 or 6 slots, the
// SM's share of L2's bandwidth: step_floor_probe's stream_ring variants in
// experiments/results/kernel_probes/v17_step_floor_probe_H100_run{4,5}.json).
// Where two stages would leave the ring fewer than kTcMinTwoStageRing slots
// (sLSTM 1x768: 2) a streaming head takes one stage, fetched at the top of
// its own step and waited for after the MMA, to give the ring its room
// (sLSTM 1x768 forward+backward on H100s: 11.0 ms with one stage and 4
// slots, 12.7 with two stages and 2).
template <class Cell, class S, int D, int kCluster>
struct TcBackward {
  using Tiling = TcTiling<Cell::kGates, D, kCluster>;
  static constexpr int kGates = Cell::kGates, kGroups = Tiling::kDGroupsPerWarp;
  static constexpr int kCtaDims = Tiling::kCtaDims;
  static constexpr int kFloatPitch = (Cell::kCache + Cell::kStates) * kCtaDims + 4;
  static constexpr int kGradPitch = Cell::kStates * kCtaDims + 8;
  static constexpr int kDeltaPitch = kGates * kCtaDims + 8;
  static constexpr int kSumPitch = kCtaDims + 8;
  static constexpr uint32_t kReceivedBytes = uint32_t(kCluster - 1) * kTcRows * kCtaDims * 4;  // per filling
  // The warps of the step (never a split of K: a warp per group of dims).
  static constexpr int kStepThreads = 32 * Tiling::kDimWarps;
  static constexpr int64_t stage_bytes() {
    return int64_t(kTcRows) * (kFloatPitch * 4 + kGradPitch * int64_t(sizeof(S)));
  }
  static constexpr int64_t delta_tiles_bytes() { return 2 * kTcRows * kDeltaPitch * int64_t(sizeof(S)); }
  static constexpr int64_t tiles_bytes() {
    return delta_tiles_bytes() + 2 * int64_t(kCluster - 1) * kTcRows * kSumPitch * 4;
  }
  static constexpr int64_t bytes_with(int stages) { return stages * stage_bytes() + tiles_bytes(); }

  // Rᵀ of a wide head: k-tiles of the CTA's share of K, registers per slice.
  static constexpr bool kWide = tc_wide(kGates, D);
  static constexpr int kKTiles = kGates * kCtaDims / 16;
  static constexpr int kRegisterSlices =
      kWide ? std::min(kCluster, kTcWideBackwardRRegisters / (2 * kGroups * kKTiles)) : kCluster;
  static constexpr int kSharedSlices = kCluster - kRegisterSlices;
  static constexpr int64_t kSliceBytes = int64_t(kKTiles) * kGroups * kStepThreads * 8;
  // The kernel's static shared memory (its mbarriers) counts against the budget too.
  static constexpr int64_t slices_fit(int stages) {
    return kWide ? (kTcSmemBudget - kTcBackwardStaticBytes - bytes_with(stages)) / kSliceBytes : 0;
  }
  static constexpr int64_t kSlicesFit = slices_fit(2);
  static constexpr bool kResident = kSlicesFit >= kSharedSlices;
  static constexpr bool kStreams = !kResident;
  static constexpr bool kOneStage = kStreams && kSlicesFit < kTcMinTwoStageRing;
  static constexpr int64_t kRingFit = slices_fit(kOneStage ? 1 : 2);  // a streaming head's ring
  static constexpr int kRingSlots = kResident ? kSharedSlices : int(std::min<int64_t>(kRingFit, kTcMaxRing));
  static constexpr int kThreads = kStepThreads + (kStreams ? 32 : 0);  // + the producer warp

  // Steps fetched ahead: 0 where the head streams through a ring beside one
  // stage (fetched in the step that reads it), 1 for another wide head, else
  // the most whose stages fit, up to kTcMaxBackwardPrefetch, and at least 1.
  static constexpr int deepest_prefetch() {
    for (int p = kTcMaxBackwardPrefetch; p > 1; --p)
      if (bytes_with(p + 1) <= kTcSmemBudget) return p;
    return 1;
  }
  static constexpr int kPrefetch = kOneStage ? 0 : kWide ? 1 : deepest_prefetch();
  static constexpr int kStages = kPrefetch + 1;
  static constexpr int64_t delta_offset() { return kStages * stage_bytes(); }
  static constexpr int64_t received_offset() { return delta_offset() + delta_tiles_bytes(); }
  static constexpr int64_t slices_offset() { return bytes_with(kStages); }
  static constexpr int64_t smem_bytes() { return bytes_with(kStages) + kRingSlots * kSliceBytes; }
  // The packed copy of the streamed slices, per head: [CTA][slice][k-tile][thread] of 8 bytes.
  static constexpr int64_t streamed_bytes_per_head() {
    return kStreams ? int64_t(kCluster) * kSharedSlices * kSliceBytes : 0;
  }
  static_assert(!Tiling::kBackwardCompiled || !kWide ||
                    (kCluster > 1 && kGroups == 1 && kRingSlots >= 2 &&
                     smem_bytes() + kTcBackwardStaticBytes <= kTcSmemBudget),
                "a wide head's backward: a cluster, an even gate count, Rᵀ's shared slices fit two at a time");
};

// Head dims the tensor-core kernels are compiled for (fused/instances/, from
// scripts/generate_fused_instances.py; the tuner's head_dim_is_compiled): every
// multiple of 16 up to 256, and over it those an LSTM or sLSTM head can be
// split into (at most 16 CTAs, tc_cluster_size; R partly in shared memory).
// The others over 256 (272, 304, ...) have no even split.
inline constexpr int kTcHeadDims[] = {16,  32,  48,  64,  80,  96,  112, 128, 144, 160, 176, 192, 208, 224, 240,
                                      256, 288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 672, 768};

inline bool tc_head_dim_compiled(int64_t d) {
  for (int v : kTcHeadDims)
    if (v == d) return true;
  return false;
}

}  // namespace flashrnn::fused

// What the tuner knows about one case of the tensor-core fused kernels
// (flashrnn_ops/src/fused/tc_tiling.h): their tiling, the
// registers and shared memory it takes, and the grid. The fields are the
// variables of models/tc_tiling.txt, which says how they relate.
#pragma once

#include <cstdint>
#include <string>

namespace flashrnn::tune {

struct TcConfig {
  // Block: a CTA runs `cta_dims` head dims of one head (all gates) for `rows`
  // batch rows through all steps; a head of more than `cta_warp_cap` warps is
  // split over a thread-block cluster of `cluster` CTAs (sm_90) that exchange
  // h_t and δ(R h) through distributed shared memory every step.
  int rows = 16;               // kTcRows, the MMA's M
  int cta_warp_cap = 8;        // tc_cta_warp_cap: the most warps of a CTA, 4 for an even
                               // gate count (LSTM, sLSTM) on a device with clusters
                               // (unless over 64 warps), else 8
  int cluster = 1;             // kCluster, CTAs per head: the fewest of 1…16 with whole
                               // warps, at most cta_warp_cap each, whose forward's shared
                               // memory fits 227 KiB (1 only without clusters)
  int cta_dims = 0;            // kCtaDims = head_dim / cluster
  int d_groups_per_warp = 1;   // groups of 8 head dims per warp: 1 for even gate counts, 2 for odd
  int warps = 0;               // per CTA and share of K: cta_dims / (8 · d_groups_per_warp)
  int k_split = 1;             // warps per group of dims, each with a share of K: 2 where R
                               // exceeds 128 registers per thread (the forward of an LSTM or
                               // sLSTM head over 256 dims), else 1 (kKSplit)
  int threads = 0;             // per CTA: 32 · warps · k_split

  // Grid: a CTA per (head, 16 batch rows, CTA of the head's cluster).
  int batch_tiles = 0;         // ceil(batch / rows)
  int64_t ctas = 0;            // heads · batch_tiles · cluster

  // Registers per thread: R's share exactly, the rest as a floor (working_registers).
  int r_registers_per_thread = 0;  // G·D·D·elem_bytes / (4 · threads · cluster) = G·G_w·D/(8·k_split)
                                   // (kRRegisters): R as MMA B fragments, in registers up to 128
  // Over 128 without the split (LSTM, sLSTM over 256 dims: a wide head) K is
  // split, the forward keeps the first r_register_ktiles of a warp's
  // D/(16·k_split) k-tiles per gate in registers and the other r_shared_ktiles
  // in shared memory (kRegisterRKTiles, kSharedRKTiles; none up to 96
  // registers), and the backward keeps part of Rᵀ in shared memory (below).
  int r_register_ktiles = 0;
  int r_shared_ktiles = 0;
  int r_forward_registers = 0;     // R's registers per thread in the forward: 2·G·G_w·r_register_ktiles
  bool backward = true;            // whether the backward kernel runs the case: wherever the forward does
  int backward_threads = 0;        // TcBackward::kThreads: 32 · warps (never a split of K), + 32 for
                                   // the producer warp where it streams Rᵀ
  // Rᵀ in the backward: `cluster` slices (the partial sums owed to each CTA)
  // of G·cta_dims/16 k-tiles. All in registers where R fits them; a wide head
  // keeps its first backward_register_slices in at most 96 registers and the
  // other backward_shared_slices in shared memory: resident where they fit
  // beside two stages (up to 512 dims), else streamed every step from a packed
  // copy in global memory (L2) through a ring of backward_ring_slots by a
  // producer warp (576 dims and over), beside two stages, or beside a single
  // one where two would leave the ring fewer than 3 slots (kTcMinTwoStageRing:
  // sLSTM 1x768).
  int backward_r_registers = 0;     // Rᵀ's registers per thread: 2·G_w·(G·cta_dims/16)·backward_register_slices
  int backward_register_slices = 0; // kRegisterSlices (the cluster where R is in registers)
  int backward_shared_slices = 0;   // kSharedSlices
  int64_t backward_slice_bytes = 0; // kSliceBytes: G·cta_dims/16 k-tiles x G_w x 32·warps threads x 8 B
  int backward_ring_slots = 0;      // kRingSlots: every shared slice where resident, else the most
                                    // that fit beside the stages, at most 6 (kTcMaxRing)
  bool backward_streams = false;    // kStreams: the producer warp streams the shared slices
  bool backward_one_stage = false;  // kOneStage: it streams them beside one stage (prefetch 0), two
                                    // stages leaving the ring fewer than 3 slots
  int working_registers = 0;       // the fewest a step needs besides R (accumulators, A fragment, addresses)
  int register_cap = 0;            // what __launch_bounds__(threads) leaves: min(per thread, per block / threads)

  // Shared memory per CTA, bytes: exactly TcForward / TcBackward::smem_bytes().
  int64_t forward_smem_bytes = 0;
  int forward_prefetch = 0;        // TcForward::kPrefetch: steps of Wx loaded ahead
  bool forward_slice_exchange = false;  // TcForward::kSliceExchange: h handed over by CTA slice (a
                                        // bulk copy to each peer, an mbarrier per source CTA) in a wide
                                        // head (k_split 2) of an even cluster and cta_dims a multiple of
                                        // 16; its two h tiles [cluster][16][cta_dims + 8], not [16][D + 8]
  bool forward_save_tiles = false;  // TcForward::kSaveTile: an even gate count with R in registers
                                    // split over a cluster stores a step's saves through two tiles
  int64_t backward_smem_bytes = 0; // its stages and tiles, and a wide head's ring of Rᵀ's slices
  int64_t backward_static_smem_bytes = 0;  // kTcBackwardStaticBytes: its static shared memory (mbarriers)
                                   // besides; a wide head's slices leave room for it in 227 KiB
  int backward_prefetch = 0;       // TcBackward::kPrefetch: steps loaded ahead (1 for a wide head,
                                   // 0 where Rᵀ is streamed beside one stage)
  int backward_stages = 0;         // kPrefetch + 1 (1 where Rᵀ is streamed beside one stage)
  int64_t backward_stage_bytes = 0;
};

// One line: "128 threads (4 warps x 1 group of 8 head dims), ..., 24 CTAs (...), R 32
// registers/thread, ..."; a split head adds "2 CTAs per head (cluster, 32 dims each)".
std::string describe(const TcConfig& config);

}  // namespace flashrnn::tune

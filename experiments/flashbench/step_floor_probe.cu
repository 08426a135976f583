// What bounds one step of the 1x768 tensor-core forward. Results on one H100:
// experiments/results/kernel_probes/v17_step_floor_probe_H100_run{1..5}.json
// (docs/kernels.md, "What bounds a step").
//
// One 16-CTA cluster of 12 warps runs the step of tc_forward.cuh's inference
// loop at LSTM 1x768, B = 16, with its tiling (K split over the two warps of
// each group of 8 dims, 12 of a warp's 24 k-tiles of R in registers and 12 in
// shared memory, the two warps' sums added through shared memory, the cell in
// fp32 registers, h published into every CTA) and parts of it switched off or
// done another way, so that each variant's time per step says what a part costs:
//
//   full                  the st.async exchange's step: wait for all of h_{t-1}, MMA, cell, st.async h to every CTA
//   mma                   no exchange: each CTA feeds its own h back (the MMA and the cell alone)
//   mma_regs              mma, R's shared-memory k-tiles read from registers instead (no R traffic)
//   exchange              no MMA: the cell, the st.async publish and the wait alone
//   per_source            full, one mbarrier per source CTA: a warp multiplies each CTA's slice of h
//                         as soon as that slice is in, starting with its own CTA's
//   bulk                  full, h laid out by source CTA, each CTA's slice sent to each peer as one
//                         bulk copy (cp.async.bulk shared::cluster) after a CTA barrier
//   bulk_source           bulk with per_source's waits (the kernel's: slice_exchange.cuh)
//   bulk_source_in_order  the same, every warp taking the sources in rank order
//   bulk_source_regs      bulk_source, R all from registers (what a faster MMA would give)
//   bulk_part_source      bulk_source, each K part's 8 rows sent after its own warps' barrier
//   bulk_rows_source      bulk_source in the kernel's [row][D + 8] layout: 16 copies of a row a peer
//   bulk_pair_source      h in 8x8 blocks [source][group of 8 dims][16][8]; each warp pair sends its
//                         group (256 B) to each peer once its cells are done: no CTA barrier
//   bulk_pair_source_regs the same with R all from registers
//   *_exchange            the publish and wait of bulk, bulk_part, bulk_rows alone (no MMA)
//   halves_mma, halves    the batch as two independent halves, the MMA transposed (halves_kernel)
//   wgmma_mma(_regs)      the MMA alone as warpgroup MMAs (wgmma_kernel)
//   stream_ring3/4/6      the backward's stream of Rᵀ alone through a ring of 3, 4, 6 slots (stream_kernel)
//
// Wx, the biases and the saves are left out (they are not on the step's
// critical path in the kernel). Times: the median of 5 runs of T = 1024 and of
// T = 2048, per step = their difference / 1024 (no launch cost). Standalone:
//   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -I flashrnn_ops/src \
//     experiments/flashbench/step_floor_probe.cu -o probe
//   ./probe [--json FILE]
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

#include "cells/lstm.h"
#include "fused/cluster_exchange.cuh"
#include "fused/mbarrier.cuh"
#include "fused/mma.cuh"
#include "fused/slice_ring.cuh"

namespace fused = flashrnn::fused;
namespace mma = flashrnn::fused::mma;
namespace mbarrier = flashrnn::fused::mbarrier;
using S = __nv_bfloat16;

constexpr int D = 768, Q = 16, Dc = D / Q, G = 4;   // head dim, cluster, dims per CTA, gates
constexpr int KS = 2, KW = D / 16 / KS, KR = 12;    // K parts, k-tiles per part, in registers
constexpr int DW = Dc / 8, kThreads = 32 * DW * KS;  // warps per part (8 dims each), threads
constexpr int kSourcesPerPart = Q / KS, kTilesPerSource = Dc / 16;
constexpr int kHPitch = D + 8;                        // the kernel's h tile: [row][D + 8]
constexpr int kSlicePitch = Dc + 8, kSliceElems = 16 * kSlicePitch;  // by source: [source][row][Dc + 8]
constexpr uint32_t kSliceBytes = kSliceElems * sizeof(S);

// How a CTA hands its h to the others.
enum Publish {
  kNone,           // it does not: each CTA feeds its own h back (no exchange)
  kStAsync,        // the kernel's: each thread st.async's its 4 bytes to every CTA, one mbarrier a tile
  kStAsyncSource,  // the same, counted on one mbarrier per source CTA
  kBulkSlice,      // h by source CTA; after a CTA barrier, one bulk copy of the CTA's slice to each peer
  kBulkPart,       // the same per K part: each part's 8 rows after its own 6 warps' barrier (2 copies a peer)
  kBulkRows,       // the kernel's layout [row][D + 8]; after a CTA barrier, 16 bulk copies a peer (a row each)
  kBulkPair,       // h as [source][group of 8 dims][16 rows][8] (8x8 blocks, no padding); each warp pair's
                   // group (256 B) to each peer as soon as the pair's cells are done: no CTA barrier
};

__device__ void bulk_copy(uint32_t to_cluster, uint32_t from, uint32_t bytes, uint32_t barrier_cluster) {
  asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                   to_cluster),
               "r"(from), "r"(bytes), "r"(barrier_cluster) : "memory");
}

// kMma: the step multiplies; kSharedR: 12 of R's 24 k-tiles a warp from shared
// memory (else all from registers); kPerSource: a warp waits for each source's
// slice of h just before it multiplies it (else for all before the MMA);
// kRotate: a warp takes its sources starting from its CTA's rank.
template <Publish kPublish, bool kMma, bool kSharedR, bool kPerSource, bool kRotate, bool kCtaWait>
__global__ void __launch_bounds__(kThreads) step_kernel(int steps, float* out) {
  // kCtaWait: the per-source waits at CTA scope (no acquire.cluster: the bulk copies land in this CTA's
  // shared memory and complete on its own mbarrier, as a TMA load does).
  const auto wait_source = [](uint32_t barrier, uint32_t parity) {
    if constexpr (kCtaWait)
      mbarrier::wait_cta(barrier, parity);
    else
      mbarrier::wait_cluster(barrier, parity);
  };
  constexpr bool kBySource = kPublish == kBulkSlice || kPublish == kBulkPart;  // h tile [source][row][Dc + 8]
  constexpr bool kByGroup = kPublish == kBulkPair;                              // [source][Dc / 8][16][8]
  constexpr int kTileElems = kBySource ? Q * kSliceElems : kByGroup ? 16 * D : 16 * kHPitch;
  constexpr bool kSourceBarriers = kPublish >= kStAsyncSource;  // else the kernel's ClusterExchange
  constexpr bool kExchange = kPublish != kNone;
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ __align__(8) uint64_t barriers[2 * Q];  // [tile][source] (ClusterExchange: the first 2)
  S* h_tiles = reinterpret_cast<S*>(smem);
  uint2* r_shared = reinterpret_cast<uint2*>(h_tiles + 2 * kTileElems);
  float2* partials = reinterpret_cast<float2*>(r_shared + (KW - KR) * G * kThreads);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32 % DW, part = threadIdx.x / 32 / DW;
  const int rank = int(blockIdx.x % Q);
  const int row = lane / 4 + 8 * part, dim = rank * Dc + 8 * warp + 2 * (lane % 4);  // what this thread finishes
  const auto h_index = [](int r, int k) {
    if constexpr (kByGroup) return k / 8 * 128 + r * 8 + k % 8;  // (source, group) blocks in order
    return kBySource ? k / Dc * kSliceElems + r * kSlicePitch + k % Dc : r * kHPitch + k;
  };

  uint32_t r_frag[G][KR][2];  // R's values do not change the time: any small numbers
#pragma unroll
  for (int g = 0; g < G; ++g)
#pragma unroll
    for (int kt = 0; kt < KR; ++kt)
      r_frag[g][kt][0] = r_frag[g][kt][1] = mma::pack<S>(1e-3f * ((lane + g + kt) % 7), -1e-3f * (kt % 3));
  for (int i = threadIdx.x; i < (KW - KR) * G * kThreads; i += kThreads)
    r_shared[i] = make_uint2(mma::pack<S>(1e-3f * (i % 5), 0.f), mma::pack<S>(0.f, -1e-3f * (i % 3)));
  for (int i = threadIdx.x; i < 2 * kTileElems; i += kThreads) h_tiles[i] = __float2bfloat16(0.f);

  const uint32_t base = mma::shared_address(smem), barrier_base = mma::shared_address(barriers);
  const auto barrier_at = [&](int tile, int source) { return barrier_base + 8 * (tile * Q + source); };
  const fused::ClusterExchange<Q> exchange(smem, barriers, 16 * D * sizeof(S));
  uint32_t peer[Q];
#pragma unroll
  for (int q = 0; q < Q; ++q) peer[q] = mma::cluster_address(base, q);
  if constexpr (kSourceBarriers) {
    if (threadIdx.x == 0) {
      for (int i = 0; i < 2 * Q; ++i)  // kBulkPair: its own slice comes from each of its DW pairs
        mbarrier::init(barrier_at(i / Q, i % Q), kPublish == kBulkPart ? 2 : kByGroup && i % Q == rank ? DW : 1);
      asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
  } else if constexpr (kExchange) {
    exchange.start();
  }
  const auto wait_all = [&](int tile, uint32_t parity) {
    if constexpr (kSourceBarriers) {
      for (int q = 0; q < Q; ++q) mbarrier::wait_cluster(barrier_at(tile, q), parity);
    } else {
      exchange.wait(tile, parity);
    }
  };

  float c[2] = {0.f, 0.f};
  for (int t = 0; t < steps; ++t) {
    __syncthreads();  // (the kernel's: the Wx stage)
    const int prev = (t + 1) & 1, next = t & 1;
    const uint32_t parity = uint32_t(t - 1) >> 1 & 1;
    const S* h_prev = h_tiles + prev * kTileElems;
    if (kExchange && t > 0 && !(kMma && kPerSource)) wait_all(prev, parity);

    float acc[G][4] = {};
    if constexpr (kMma) {
#pragma unroll
      for (int i = 0; i < kSourcesPerPart; ++i) {
        const int source = part * kSourcesPerPart + (kRotate ? (rank + i) % kSourcesPerPart : i);
        if (kExchange && kPerSource && t > 0) wait_source(barrier_at(prev, source), parity);
#pragma unroll
        for (int kk = 0; kk < kTilesPerSource; ++kk) {
          const int at = i * kTilesPerSource + kk;  // which of R's k-tiles (a constant after unrolling)
          uint32_t a[4];
          if constexpr (kByGroup) {  // this lane's row of the four 8x8 blocks: row lane % 8 (+8), k + 8 (lane / 16)
            const S* lane_row =
                h_prev + h_index(lane % 8 + 8 * (lane / 8 % 2), source * Dc + 16 * kk + 8 * (lane / 16));
            asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                         : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3]) : "r"(mma::shared_address(lane_row)));
          } else {  // rows a pitch apart, the kernel's address arithmetic (a per-lane k / Dc: +0.8 us a step)
            mma::load_a_fragment(a, h_prev + h_index(0, source * Dc + 16 * kk), kBySource ? kSlicePitch : kHPitch);
          }
#pragma unroll
          for (int g = 0; g < G; ++g) {
            if (at < KR || !kSharedR) {
              mma::mma_16816<S>(acc[g], a, r_frag[g][at % KR]);
            } else {
              const uint2 r = r_shared[((at - KR) * G + g) * kThreads + threadIdx.x];
              const uint32_t b[2] = {r.x, r.y};
              mma::mma_16816<S>(acc[g], a, b);
            }
          }
        }
      }
    }
    // The two parts' sums: each hands the other the row it does not finish.
    const int mine = (warp * KS + part) * G, theirs = (warp * KS + 1 - part) * G;
#pragma unroll
    for (int g = 0; g < G; ++g)
      partials[(mine + g) * 32 + lane] = part ? make_float2(acc[g][0], acc[g][1]) : make_float2(acc[g][2], acc[g][3]);
    mma::sync_warps(1 + warp, 64);
    float h[2];
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      float wx[G] = {}, rh[G], bias[G] = {}, state[2] = {0.f, c[e]}, next_state[2], cache[G];
#pragma unroll
      for (int g = 0; g < G; ++g) {
        const float2 other = partials[(theirs + g) * 32 + lane];
        rh[g] = (part ? acc[g][2 + e] : acc[g][e]) + (e == 0 ? other.x : other.y);
      }
      flashrnn::cells::Lstm::forward<float, flashrnn::cells::FastMath>(wx, rh, bias, state, next_state, cache);
      c[e] = next_state[1];
      h[e] = next_state[0];
    }

    const uint32_t value = mma::pack<S>(h[0], h[1]);
    S* h_next = h_tiles + next * kTileElems;
    uint32_t* mine_at = reinterpret_cast<uint32_t*>(h_next + h_index(row, dim));
    const uint32_t offset = mma::shared_address(mine_at) - base;
    if constexpr (kPublish == kNone) {
      *mine_at = value;
    } else if constexpr (kPublish == kStAsync) {
      exchange.expect(next);
      exchange.store(next, mine_at, value);
    } else if constexpr (kPublish == kStAsyncSource) {  // counted on the source's mbarrier in each CTA
      if (threadIdx.x < Q) mbarrier::arrive_expect_bytes(barrier_at(next, threadIdx.x), 16 * Dc * sizeof(S));
#pragma unroll
      for (int q = 0; q < Q; ++q)
        asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];\n" ::"r"(
                         peer[q] + offset),
                     "r"(value), "r"(peer[q] + barrier_at(next, rank) - base) : "memory");
    } else {  // into the CTA's own slice, then bulk copies of it to each peer
      *mine_at = value;
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // the copies read it in the async proxy
      const uint32_t slice = mma::shared_address(h_next + h_index(0, rank * Dc));
      if constexpr (kPublish == kBulkPair) {
        mma::sync_warps(1 + warp, 64);  // the pair's two rows of 8 are in
        const int q = lane;
        if (part == 0 && q == rank) mbarrier::arrive(barrier_at(next, rank));
        if (part == 0 && q < Q && q != rank) {
          if (warp == 0) mbarrier::arrive_expect_bytes(barrier_at(next, q), 16 * Dc * sizeof(S));  // q's whole slice
          const uint32_t group = slice + warp * 256;
          bulk_copy(mma::cluster_address(group, q), group, 256, mma::cluster_address(barrier_at(next, rank), q));
        }
      } else if constexpr (kPublish == kBulkPart) {
        mma::sync_warps(14 + part, kThreads / KS);
        const int q = threadIdx.x % (kThreads / KS);
        constexpr uint32_t kBytes = kSliceBytes / KS;
        if (q == rank) mbarrier::arrive(barrier_at(next, rank));
        if (q < Q && q != rank) {
          mbarrier::arrive_expect_bytes(barrier_at(next, q), kBytes);
          bulk_copy(mma::cluster_address(slice + part * kBytes, q), slice + part * kBytes, kBytes,
                    mma::cluster_address(barrier_at(next, rank), q));
        }
      } else {
        mma::sync_warps(15, kThreads);
        const int q = kPublish == kBulkSlice ? threadIdx.x : threadIdx.x / 16;
        if (threadIdx.x == rank) mbarrier::arrive(barrier_at(next, rank));  // its own slice is in
        if (threadIdx.x < Q && threadIdx.x != rank)
          mbarrier::arrive_expect_bytes(barrier_at(next, threadIdx.x), 16 * Dc * sizeof(S) + (kBySource ? 16 * 16 : 0));
        if (q < Q && q != rank) {
          const uint32_t from = kPublish == kBulkSlice ? slice : slice + threadIdx.x % 16 * kHPitch * sizeof(S);
          const uint32_t bytes = kPublish == kBulkSlice ? kSliceBytes : Dc * sizeof(S);
          bulk_copy(mma::cluster_address(from, q), from, bytes, mma::cluster_address(barrier_at(next, rank), q));
        }
      }
    }
  }
  // No store may reach an exited CTA: every CTA waits for the last step's h.
  if (kExchange) wait_all((steps - 1) & 1, uint32_t(steps - 1) >> 1 & 1);
  out[blockIdx.x * kThreads + threadIdx.x] = c[0] + c[1];
}

// The step as two independent halves of the batch (rows 0-7, 8-15: separate
// recurrences), the MMA transposed so that a half is N = 8 of m16n8k16 with
// no waste: out^T[gate row][batch] = R[gate row][k] · h^T[k][batch], R the A
// operand (a warp's 8 dims x 4 gates = two M tiles: i and f of its dims, z and
// o), h the B operand. Each half waits for its slices, multiplies, adds the
// two K parts' sums, runs its cells (one element a thread) and sends its
// slice (8 rows) by bulk copy; its copies fly while the other half multiplies.
// The same MMAs, R registers and shared-memory bytes as the kernel's step.
constexpr int kHalfSliceElems = 8 * kSlicePitch;  // [8 rows][Dc + 8]
constexpr int kHalfTileElems = Q * kHalfSliceElems;
constexpr uint32_t kHalfSliceBytes = kHalfSliceElems * sizeof(S);

__device__ void load_b_fragment(uint32_t (&b)[2], const S* lane_row) {  // rows lane % 8, k + 8 * (lane / 8 % 2)
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(b[0]), "=r"(b[1]) : "r"(mma::shared_address(lane_row)));
}

template <bool kExchange>
__global__ void __launch_bounds__(kThreads) halves_kernel(int steps, float* out) {
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ __align__(8) uint64_t barriers[2 * 2 * Q];  // [half][tile][source]
  S* h_tiles = reinterpret_cast<S*>(smem);                                   // [half][tile][source][8][Dc + 8]
  uint4* r_shared = reinterpret_cast<uint4*>(h_tiles + 4 * kHalfTileElems);  // [KW - KR][M tile][thread]
  float2* partials = reinterpret_cast<float2*>(r_shared + (KW - KR) * 2 * kThreads);  // [warp][part][M tile][32]
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32 % DW, part = threadIdx.x / 32 / DW;
  const int rank = int(blockIdx.x % Q);
  // The element this thread finishes in each half: batch row 2 (lane % 4) + part of the half, dim d.
  const int row = 2 * (lane % 4) + part, d = 8 * warp + lane / 4;
  uint32_t r_frag[2][KR][4];
#pragma unroll
  for (int m = 0; m < 2; ++m)
#pragma unroll
    for (int kt = 0; kt < KR; ++kt)
#pragma unroll
      for (int i = 0; i < 4; ++i) r_frag[m][kt][i] = mma::pack<S>(1e-3f * ((lane + m + kt + i) % 7), -1e-3f * (kt % 3));
  for (int i = threadIdx.x; i < (KW - KR) * 2 * kThreads; i += kThreads)
    r_shared[i] = make_uint4(mma::pack<S>(1e-3f * (i % 5), 0.f), mma::pack<S>(0.f, -1e-3f * (i % 3)),
                             mma::pack<S>(1e-3f * (i % 3), 0.f), mma::pack<S>(0.f, 1e-3f * (i % 5)));
  for (int i = threadIdx.x; i < 4 * kHalfTileElems; i += kThreads) h_tiles[i] = __float2bfloat16(0.f);

  const uint32_t barrier_base = mma::shared_address(barriers);
  const auto barrier_at = [&](int half, int tile, int source) {
    return barrier_base + 8 * ((half * 2 + tile) * Q + source);
  };
  if (threadIdx.x == 0) {
    for (int i = 0; i < 4 * Q; ++i) mbarrier::init(barrier_base + 8 * i, 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");

  float c[2] = {0.f, 0.f};
  for (int t = 0; t < steps; ++t) {
    __syncthreads();  // (the kernel's: the Wx stage)
    const int prev = (t + 1) & 1, next = t & 1;
    const uint32_t parity = uint32_t(t - 1) >> 1 & 1;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const S* h_prev = h_tiles + (half * 2 + prev) * kHalfTileElems;
      float chains[2][2][4] = {};  // [M tile][k-tile parity]: four chains of MMAs, as the kernel's four gates
#pragma unroll
      for (int i = 0; i < kSourcesPerPart; ++i) {
        const int source = part * kSourcesPerPart + (rank + i) % kSourcesPerPart;
        if (kExchange && t > 0) mbarrier::wait_cluster(barrier_at(half, prev, source), parity);
#pragma unroll
        for (int kk = 0; kk < kTilesPerSource; ++kk) {
          const int at = i * kTilesPerSource + kk;
          uint32_t b[2];
          load_b_fragment(b, h_prev + source * kHalfSliceElems + lane % 8 * kSlicePitch + 16 * kk + 8 * (lane / 8 % 2));
#pragma unroll
          for (int m = 0; m < 2; ++m) {
            if (at < KR) {
              mma::mma_16816<S>(chains[m][at % 2], r_frag[m][at % KR], b);
            } else {
              const uint4 r = r_shared[((at - KR) * 2 + m) * kThreads + threadIdx.x];
              const uint32_t a[4] = {r.x, r.y, r.z, r.w};
              mma::mma_16816<S>(chains[m][at % 2], a, b);
            }
          }
        }
      }
      float acc[2][4];
#pragma unroll
      for (int m = 0; m < 2; ++m)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[m][e] = chains[m][0][e] + chains[m][1][e];
      // Part p finishes batch column 2 (lane % 4) + p: it hands the other part the other column.
      const int mine = (warp * KS + part) * 2, theirs = (warp * KS + 1 - part) * 2;
#pragma unroll
      for (int m = 0; m < 2; ++m)
        partials[(mine + m) * 32 + lane] = part ? make_float2(acc[m][0], acc[m][2]) : make_float2(acc[m][1], acc[m][3]);
      mma::sync_warps(1 + warp, 64);
      float rh[G];
#pragma unroll
      for (int m = 0; m < 2; ++m) {
        const float2 other = partials[(theirs + m) * 32 + lane];
        rh[2 * m] = (part ? acc[m][1] : acc[m][0]) + other.x;      // i, z: rows lane / 4
        rh[2 * m + 1] = (part ? acc[m][3] : acc[m][2]) + other.y;  // f, o: rows lane / 4 + 8
      }
      const float gates[G] = {rh[0], rh[1], rh[2], rh[3]};
      float wx[G] = {}, bias[G] = {}, state[2] = {0.f, c[half]}, next_state[2], cache[G];
      flashrnn::cells::Lstm::forward<float, flashrnn::cells::FastMath>(wx, gates, bias, state, next_state, cache);
      c[half] = next_state[1];

      S* h_next = h_tiles + (half * 2 + next) * kHalfTileElems;
      h_next[rank * kHalfSliceElems + row * kSlicePitch + d] = __float2bfloat16(next_state[0]);
      if constexpr (kExchange) {
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        mma::sync_warps(15, kThreads);
        const int q = threadIdx.x;
        if (q == rank) mbarrier::arrive(barrier_at(half, next, rank));
        if (q < Q && q != rank) {
          mbarrier::arrive_expect_bytes(barrier_at(half, next, q), kHalfSliceBytes);
          const uint32_t slice = mma::shared_address(h_next + rank * kHalfSliceElems);
          bulk_copy(mma::cluster_address(slice, q), slice, kHalfSliceBytes,
                    mma::cluster_address(barrier_at(half, next, rank), q));
        }
      }
    }
  }
  if (kExchange)
    for (int half = 0; half < 2; ++half)
      for (int q = 0; q < Q; ++q)
        mbarrier::wait_cluster(barrier_at(half, (steps - 1) & 1, q), uint32_t(steps - 1) >> 1 & 1);
  out[blockIdx.x * kThreads + threadIdx.x] = c[0] + c[1];
}

// The MMA alone as warpgroup MMAs (sm_90a wgmma), what a rewrite of the step
// around them would start from: out^T[gate row][batch] = R · h^T, R the A
// operand (M = 64 gate rows a warpgroup: 3 warpgroups for the CTA's 192), h
// the B operand (N = 16 batch rows, K-major in shared memory as 8x8 core
// matrices), 48 k-steps of m64n16k16 a step: the first 24 with A from
// registers (96 a thread, as the kernel's R), the rest from shared memory
// (kSharedA; else the registers again: no R traffic). Only the time counts:
// the core matrices' order is not checked.
__device__ uint64_t smem_descriptor(const void* start, uint32_t leading_bytes, uint32_t stride_bytes) {
  return uint64_t(mma::shared_address(start) >> 4 & 0x3FFF) | uint64_t(leading_bytes >> 4) << 16 |
         uint64_t(stride_bytes >> 4) << 32;  // no swizzle
}

template <bool kSharedA>
__global__ void __launch_bounds__(kThreads) wgmma_kernel(int steps, float* out) {
  constexpr int kKSteps = D / 16, kRegSteps = 24;
  extern __shared__ __align__(128) unsigned char smem[];
  S* h_tile = reinterpret_cast<S*>(smem);                   // [k-step][2 n cores][2 k cores][8][8]: 512 B a k-step
  S* r_tiles = h_tile + 16 * D;                             // [warpgroup][k-step - 24][8 m cores][2 k cores][8][8]
  const int warpgroup = threadIdx.x / 128;
  uint32_t r_frag[kRegSteps][4];
#pragma unroll
  for (int ks = 0; ks < kRegSteps; ++ks)
#pragma unroll
    for (int i = 0; i < 4; ++i) r_frag[ks][i] = mma::pack<S>(1e-3f * ((threadIdx.x + ks + i) % 7), -1e-3f * (ks % 3));
  for (int i = threadIdx.x; i < 16 * D + 3 * (kKSteps - kRegSteps) * 64 * 16; i += kThreads)
    h_tile[i] = __float2bfloat16(1e-3f * (i % 11));
  __syncthreads();
  const S* my_r = r_tiles + warpgroup * (kKSteps - kRegSteps) * 64 * 16;

  float c = 0.f;
  for (int t = 0; t < steps; ++t) {
    __syncthreads();
    float d[8] = {};
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int ks = 0; ks < kKSteps; ++ks) {
      const uint64_t b = smem_descriptor(h_tile + ks * 256, 128, 256);
      if (ks < kRegSteps || !kSharedA) {
        const uint32_t(&a)[4] = r_frag[ks % kRegSteps];
        asm volatile(
            "{\n .reg .pred p;\n setp.ne.b32 p, %13, 0;\n"
            " wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7}, {%8,%9,%10,%11}, %12, p, "
            "1, 1, 0;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(ks > 0 ? 1 : 0));
      } else {
        const uint64_t a = smem_descriptor(my_r + (ks - kRegSteps) * 1024, 128, 256);
        asm volatile(
            "{\n .reg .pred p;\n setp.ne.b32 p, %10, 0;\n"
            " wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7}, %8, %9, p, "
            "1, 1, 0, 0;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
            : "l"(a), "l"(b), "r"(ks > 0 ? 1 : 0));
      }
    }
    asm volatile("wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    // A cell's worth of work on the sums, and h back into the tile (the next step's B).
    float gates[G] = {d[0] + d[4], d[1] + d[5], d[2] + d[6], d[3] + d[7]}, wx[G] = {}, bias[G] = {};
    float state[2] = {0.f, c}, next_state[2], cache[G];
    flashrnn::cells::Lstm::forward<float, flashrnn::cells::FastMath>(wx, gates, bias, state, next_state, cache);
    c = next_state[1];
    __syncthreads();  // every warpgroup's B reads are done
    h_tile[threadIdx.x * 32] = __float2bfloat16(next_state[0]);
  }
  out[blockIdx.x * kThreads + threadIdx.x] = c;
}

// The 1x768 backward's stream of Rᵀ alone (tc_backward.cuh): 16 CTAs of
// 6 consumer warps and a producer warp; every step each CTA takes its 12 slices
// of 18 KiB (12 k-tiles x 192 threads x 8 bytes) from a packed copy in global
// memory (L2, 3.5 MB in all) through a SliceRing of kSlots slots, each
// consumer thread reading its 8 bytes a k-tile of each slice, then the
// consumers' barrier. What streaming costs a step with nothing else to do.
constexpr int kStreamConsumers = 192, kStreamSlices = 12, kStreamKTiles = 12;
constexpr uint32_t kStreamSliceBytes = kStreamKTiles * kStreamConsumers * 8;

template <int kSlots>
__global__ void __launch_bounds__(kStreamConsumers + 32) stream_kernel(int steps, float* out, const uint2* packed) {
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ __align__(8) uint64_t ring_barriers[2 * kSlots];
  const fused::SliceRing<kSlots> ring(smem, ring_barriers, kStreamSliceBytes);
  if (threadIdx.x == 0) {
    ring.init(kStreamConsumers);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  const int rank = int(blockIdx.x % Q);
  if (threadIdx.x >= kStreamConsumers) {  // the producer warp: one thread copies
    if (threadIdx.x == kStreamConsumers)
      ring.produce(packed + rank * kStreamSlices * kStreamKTiles * kStreamConsumers, kStreamSlices, uint32_t(steps));
    return;
  }
  uint32_t sum = 0, slice = 0;
  for (int t = 0; t < steps; ++t) {
    for (int q = 0; q < kStreamSlices; ++q, ++slice) {
      const uint2* fragments = ring.template acquire<uint2>(slice);
#pragma unroll
      for (int kt = 0; kt < kStreamKTiles; ++kt) {
        const uint2 f = fragments[kt * kStreamConsumers + threadIdx.x];
        sum += f.x ^ f.y;
      }
      ring.release(slice);
    }
    mma::sync_warps(1, kStreamConsumers);  // (the step's barrier)
  }
  out[blockIdx.x * kThreads + threadIdx.x] = float(sum);
}

struct Row {
  const char* name;
  float ms_1024, us_per_step;
};

float time_ms(void (*kernel)(int, float*), int smem, int steps, float* out) {
  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim = {unsigned(Q), 1, 1};
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(Q);
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = smem;
  config.attrs = &attribute;
  config.numAttrs = 1;
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<float> times;
  for (int rep = 0; rep < 6; ++rep) {
    cudaEventRecord(start);
    cudaError_t status = cudaLaunchKernelEx(&config, kernel, steps, out);
    cudaEventRecord(stop);
    if (status == cudaSuccess) status = cudaEventSynchronize(stop);
    if (status != cudaSuccess) {
      std::fprintf(stderr, "launch failed: %s\n", cudaGetErrorString(status));
      std::exit(1);
    }
    float ms = 0.f;
    cudaEventElapsedTime(&ms, start, stop);
    if (rep > 0) times.push_back(ms);  // the first warms up
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

template <Publish kPublish, bool kMma, bool kSharedR = true, bool kPerSource = false, bool kRotate = true,
          bool kCtaWait = false>
Row measure(const char* name, float* out) {
  constexpr bool kBySource = kPublish == kBulkSlice || kPublish == kBulkPart;
  constexpr int kTileElems = kBySource ? Q * kSliceElems : kPublish == kBulkPair ? 16 * D : 16 * kHPitch;
  const int smem = 2 * kTileElems * sizeof(S) + (KW - KR) * G * kThreads * 8 + DW * KS * G * 32 * 8;
  auto kernel = step_kernel<kPublish, kMma, kSharedR, kPerSource, kRotate, kCtaWait>;
  const float t1 = time_ms(kernel, smem, 1024, out), t2 = time_ms(kernel, smem, 2048, out);
  return {name, t1, (t2 - t1) * 1000.f / 1024.f};
}

template <bool kSharedA>
Row measure_wgmma(const char* name, float* out) {
  const int smem = (16 * D + 3 * 24 * 64 * 16) * sizeof(S);
  const float t1 = time_ms(wgmma_kernel<kSharedA>, smem, 1024, out);
  const float t2 = time_ms(wgmma_kernel<kSharedA>, smem, 2048, out);
  return {name, t1, (t2 - t1) * 1000.f / 1024.f};
}

template <int kSlots>
Row measure_stream(const char* name, float* out, const uint2* packed) {
  auto kernel = stream_kernel<kSlots>;
  const int smem = kSlots * kStreamSliceBytes;
  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  float ms[2];
  for (int i = 0; i < 2; ++i) {
    const int steps = 1024 << i;
    std::vector<float> times;
    for (int rep = 0; rep < 6; ++rep) {
      cudaEvent_t start, stop;
      cudaEventCreate(&start);
      cudaEventCreate(&stop);
      cudaEventRecord(start);
      kernel<<<Q, kStreamConsumers + 32, smem>>>(steps, out, packed);
      cudaEventRecord(stop);
      if (cudaEventSynchronize(stop) != cudaSuccess) {
        std::fprintf(stderr, "stream kernel failed: %s\n", cudaGetErrorString(cudaGetLastError()));
        std::exit(1);
      }
      float elapsed = 0.f;
      cudaEventElapsedTime(&elapsed, start, stop);
      if (rep > 0) times.push_back(elapsed);
    }
    std::sort(times.begin(), times.end());
    ms[i] = times[times.size() / 2];
  }
  return {name, ms[0], (ms[1] - ms[0]) * 1000.f / 1024.f};
}

template <bool kExchange>
Row measure_halves(const char* name, float* out) {
  const int smem = 4 * kHalfTileElems * sizeof(S) + (KW - KR) * 2 * kThreads * 16 + DW * KS * 2 * 32 * 8;
  const float t1 = time_ms(halves_kernel<kExchange>, smem, 1024, out);
  const float t2 = time_ms(halves_kernel<kExchange>, smem, 2048, out);
  return {name, t1, (t2 - t1) * 1000.f / 1024.f};
}

int main(int argc, char** argv) {
  const char* json = argc == 3 && std::strcmp(argv[1], "--json") == 0 ? argv[2] : nullptr;
  float* out = nullptr;
  cudaMalloc(&out, Q * kThreads * sizeof(float));
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::vector<Row> rows;
  //          publish         mma    shared R  per source  rotate
  rows.push_back(measure<kStAsync, true>("full", out));
  rows.push_back(measure<kNone, true>("mma", out));
  rows.push_back(measure<kNone, true, false>("mma_regs", out));
  rows.push_back(measure<kStAsync, false>("exchange", out));
  rows.push_back(measure<kStAsyncSource, true, true, true>("per_source", out));
  rows.push_back(measure<kBulkSlice, true>("bulk", out));
  rows.push_back(measure<kBulkSlice, true, true, true>("bulk_source", out));
  rows.push_back(measure<kBulkSlice, true, true, true, false>("bulk_source_in_order", out));
  rows.push_back(measure<kBulkSlice, true, true, true, true, true>("bulk_source_cta_wait", out));
  rows.push_back(measure<kBulkSlice, true, false, true>("bulk_source_regs", out));
  rows.push_back(measure<kBulkPart, true, true, true>("bulk_part_source", out));
  rows.push_back(measure<kBulkRows, true, true, true>("bulk_rows_source", out));
  rows.push_back(measure<kBulkPair, true, true, true>("bulk_pair_source", out));
  rows.push_back(measure<kBulkPair, true, false, true>("bulk_pair_source_regs", out));
  rows.push_back(measure<kBulkPair, false>("bulk_pair_exchange", out));
  rows.push_back(measure<kBulkSlice, false>("bulk_exchange", out));
  rows.push_back(measure<kBulkPart, false>("bulk_part_exchange", out));
  rows.push_back(measure<kBulkRows, false>("bulk_rows_exchange", out));
  rows.push_back(measure_halves<false>("halves_mma", out));
  rows.push_back(measure_halves<true>("halves", out));
  rows.push_back(measure_wgmma<true>("wgmma_mma", out));
  rows.push_back(measure_wgmma<false>("wgmma_mma_regs", out));
  uint2* packed = nullptr;  // the backward's packed Rᵀ of one head: 3.5 MB
  cudaMalloc(&packed, size_t(Q) * kStreamSlices * kStreamSliceBytes);
  cudaMemset(packed, 1, size_t(Q) * kStreamSlices * kStreamSliceBytes);
  rows.push_back(measure_stream<3>("stream_ring3", out, packed));
  rows.push_back(measure_stream<4>("stream_ring4", out, packed));
  rows.push_back(measure_stream<6>("stream_ring6", out, packed));
  std::printf("%s, LSTM 1x768 step skeleton, B = 16, one cluster of %d CTAs x %d threads\n", prop.name, Q, kThreads);
  std::printf("%-22s %10s %12s\n", "variant", "T=1024 ms", "us per step");
  for (const Row& r : rows) std::printf("%-22s %10.3f %12.3f\n", r.name, r.ms_1024, r.us_per_step);
  if (json) {
    FILE* f = std::fopen(json, "w");
    std::fprintf(f, "{\"device\": \"%s\", \"case\": \"lstm 1x768 B=16 step skeleton\", \"variants\": [", prop.name);
    for (size_t i = 0; i < rows.size(); ++i)
      std::fprintf(f, "%s{\"name\": \"%s\", \"ms_T1024\": %.4f, \"us_per_step\": %.4f}", i ? ", " : "", rows[i].name,
                   rows[i].ms_1024, rows[i].us_per_step);
    std::fprintf(f, "]}\n");
    std::fclose(f);
  }
  return 0;
}

// The tensor-core backward: one persistent CTA (or cluster of CTAs) per (head,
// 16 batch rows) runs the steps T-1 … 0 (tiling in tc_tiling.h, the same as
// the forward's: a CTA of a cluster owns the head dims [d0, d0 + Dc)).
//
// Per step the gradient that reaches h_t through R is
//   dh[b][k] = Σ_(g,d) δ(R h)_{t+1}[b][(g, d)] · R[g][d][k]
// Each CTA computes δ(R h)_{t+1} of its own dims only, so it multiplies its
// share of K (every gate of its dims, G·Dc) into partial sums for every
// head dim k, as m16n8k16 MMAs with M = the 16 batch rows, N = 8 dims k of
// each CTA's slice, K = the CTA's (gate, dim) pairs. Rᵀ's rows for that
// share are the B operand, in registers for the whole sequence; δ(R h) of
// step t+1 is the A operand, from a double-buffered shared tile of the CTA's
// dims its warps wrote in step t+1. Of the partial sums a thread keeps those
// of its own dims and sends those of another CTA's dims to that CTA: per CTA
// and step (Q - 1)·16·Dc floats, where sending its δ(R h) slice to every CTA
// would send Q·16·G·Dc 2-byte values and make every warp read the whole
// head's tile (12×64: 2 KiB instead of 8; LSTM forward+backward on one H200,
// 12×64 and 3×256: 1.91 and 3.21 ms with partial sums, 2.28 and 4.32 with
// slices). The MMA leaves the sums exactly on the threads that own (b, k) in
// the pointwise part, so a step needs one barrier and one wait for the
// others' sums. What the pointwise part reads from memory (cache(t), the slots
// of states(t-1) the cell's backward reads, the external gradient of
// states(t)) does not depend on the recurrence: it is copied into a ring of
// shared stages with cp.async kPrefetch steps ahead (a head that streams Rᵀ
// fetches its one stage at the top of the step that reads it, and waits for it
// after the MMA). The carried gradients and δb stay in fp32 registers; δR is
// one GEMM after the kernel (recurrent_weight_gradient).
//
// A row of the CTA past the batch reads everything the batch's last row reads,
// so it computes exactly that row's values (an MMA's rows do not mix) and its
// stores in the loop write the same values to the same addresses: the step has
// no branch on the row (branches kept the compiler from interleaving the
// step's stores with its arithmetic). Only the final sums, which add, skip it.
//
// A wide head (LSTM, sLSTM over 256 dims: Rᵀ's share over the register cap)
// keeps the fragments of its first slices in registers and the others in
// shared memory (TcBackward): resident, written once by each thread for
// itself, or, where they do not fit (576 dims and over), streamed every step
// from a packed copy in global memory (tc_pack_streamed_r_kernel, read from
// L2) by a producer warp through a SliceRing. Its MMA takes one slice at a
// time (four accumulator chains over the k-tiles, A fragments of the whole
// tile in registers) and sends that slice's sums at once, so no slice's
// accumulators outlive it.
//
// δ(R h)_t goes to global memory from the tile, once complete (in step t-1):
// 16 bytes a store, the CTA's dims of each row and gate (4-byte stores from
// each thread's registers, 8 rows apart, keep the memory pipe busy: 12×64
// LSTM forward+backward 2.53 ms with them, 2.26 without, on one H200). d_rh
// is laid out for δR's one GEMM (12×64 LSTM at B = 128 on one H200: 0.26 ms,
// where δR from d_wx takes 4 strided GEMMs of 0.24 ms and a transposed copy
// of h_gemm of 0.28 ms). Where the cell's δWx equals δ(R h) (Cell::kDrhIsDwx)
// the same 16 bytes go to d_wx; otherwise each thread stores its δWx from
// registers.
#pragma once

#include <type_traits>

#include "async_copy.cuh"
#include "fused/cluster_exchange.cuh"
#include "fused/element_pointer.cuh"
#include "fused/mma.cuh"
#include "fused/slice_ring.cuh"
#include "fused/tc_tiling.h"
#include "pointwise.h"

namespace flashrnn::fused {

// Rᵀ as a B fragment of the backward's MMA (see the top): for CTA `rank`'s
// share of K, the 8 columns k = q·Dc + 8·`group` + lane/4 (CTA q's slice) and
// the K indices kk = 16·kt + 2·(lane%4) (+1, +8, +9) of the CTA's (gate, dim)
// pairs, gate kk / Dc, dim rank·Dc + kk % Dc.
template <class S, int D, int Dc>
__device__ __forceinline__ uint2 rt_fragment(const S* r_head, int rank, int q, int group, int kt, int lane) {
  uint32_t half[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int kk = 16 * kt + 8 * h + 2 * (lane % 4);
    const S* w = r_head + int64_t(kk / Dc * D + rank * Dc + kk % Dc) * D + q * Dc + 8 * group + lane / 4;
    half[h] = mma::pack<S>(static_cast<float>(w[0]), static_cast<float>(w[D]));
  }
  return make_uint2(half[0], half[1]);
}

// The packed copy of a wide head's streamed slices (TcBackward::kStreams):
// per head, CTA and slice q = kRegisterSlices + s of its share, the
// fragments [k-tile][thread] as the producer's bulk copies move them into a
// slot of the ring. One CTA per (CTA of the cluster, slice) and head.
template <class Cell, class S, int D, int kCluster>
__global__ void __launch_bounds__(TcBackward<Cell, S, D, kCluster>::kStepThreads)
    tc_pack_streamed_r_kernel(const S* r_heads, uint2* packed) {
  using K = TcBackward<Cell, S, D, kCluster>;
  constexpr int QS = K::kSharedSlices, KT = K::kKTiles;
  const int rank = int(blockIdx.x) / QS, s = int(blockIdx.x) % QS, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t n = blockIdx.y;
  const S* r_head = r_heads + n * Cell::kGates * D * D;
  uint2* slice = packed + ((n * kCluster + rank) * QS + s) * KT * K::kStepThreads;
  for (int kt = 0; kt < KT; ++kt)
    slice[kt * K::kStepThreads + threadIdx.x] =
        rt_fragment<S, D, K::kCtaDims>(r_head, rank, K::kRegisterSlices + s, warp, kt, lane);
}

// kResets: whether a reset mask is given (see tc_forward_kernel).
// r_streamed: the packed slices where the head streams them (else null).
template <class Cell, class S, int D, int kCluster, bool kResets>
__global__ void __launch_bounds__(TcBackward<Cell, S, D, kCluster>::kThreads)
    tc_backward_kernel(BackwardStepParams<float, S> p, const S* r_heads, const uint2* r_streamed) {
  // Only the tiling this architecture runs (see tc_forward_kernel).
#if defined(__CUDA_ARCH__)
  if constexpr (!tc_tiling_runs<Cell>(D, kCluster, __CUDA_ARCH__ >= 900)) {
    __trap();
    return;
  }
#endif
  using K = TcBackward<Cell, S, D, kCluster>;
  constexpr int G = Cell::kGates, NG = K::kGroups, Dc = K::kCtaDims, KT = K::kKTiles;  // KT: the CTA's share of K
  constexpr int C = Cell::kCache, NS = Cell::kStates;
  constexpr int kThreads = K::kStepThreads, kStages = K::kStages, kPrefetch = K::kPrefetch;
  constexpr int QR = K::kRegisterSlices, QS = K::kSharedSlices;  // Rᵀ's slices in registers, in shared memory
  using Exchange = ClusterExchange<kCluster>;
  using Ring = SliceRing<K::kStreams ? K::kRingSlots : 1>;
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ uint64_t tile_barriers[2];  // the cluster's exchange
  __shared__ uint64_t ring_barriers[2 * (K::kStreams ? K::kRingSlots : 1)];
  S* delta_tiles = reinterpret_cast<S*>(smem + K::delta_offset());        // [2][16][kDeltaPitch]
  float* sums_in = reinterpret_cast<float*>(smem + K::received_offset());  // [2][kCluster - 1][16][kSumPitch]
  uint2* r_slices = reinterpret_cast<uint2*>(smem + K::slices_offset());   // [kRingSlots][KT][kThreads]
  const Exchange exchange(smem, tile_barriers, K::kReceivedBytes);
  const Ring ring(r_slices, ring_barriers, uint32_t(K::kSliceBytes));

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int rank = int(blockIdx.x % kCluster), d0 = rank * Dc;
  const int64_t n = blockIdx.y, b0 = int64_t(blockIdx.x / kCluster) * kTcRows;
  const int64_t batch = p.extent.batch, steps = p.extent.steps;
  const bool through_r = p.dh_rec.ptr != nullptr;  // null: gradient_recurrent_cut
  // The step's threads wait for each other on a barrier of their own where a
  // producer warp runs beside them.
  const auto sync_step = [] {
    if constexpr (K::kStreams)
      mma::sync_warps(1, kThreads);
    else
      __syncthreads();
  };
  if constexpr (K::kStreams) {
    if (threadIdx.x == 0) ring.init(kThreads);  // made visible by exchange.start()'s fence and barrier
    if (threadIdx.x >= kThreads) {  // the producer warp: each pass of the MMA (one a step) reads every slice
      exchange.start();
      if (lane == 0 && through_r)
        ring.produce(r_streamed + (n * kCluster + rank) * QS * KT * kThreads, QS, uint32_t(steps));
      return;
    }
  }
  const auto row = [&](int r) { return lane / 4 + 8 * r; };
  const auto source_row = [&](int r) { return b0 + r < batch ? b0 + r : batch - 1; };  // see the top
  const auto cta_dim = [&](int j) { return 8 * (warp * NG + j) + 2 * (lane % 4); };  // of a CTA's slice
  const auto dim = [&](int j) { return d0 + cta_dim(j); };

  // Rᵀ as B fragments for the CTA's share of K (rt_fragment): slices q < QR in
  // registers; a wide head's others resident in shared memory, each thread's
  // own (no barrier before they are read), or streamed.
  uint32_t r_frag[QR][NG][KT][2];
  const S* r_head = r_heads + n * G * D * D;
#pragma unroll
  for (int q = 0; q < QR; ++q)
#pragma unroll
    for (int j = 0; j < NG; ++j)
#pragma unroll
      for (int kt = 0; kt < KT; ++kt) {
        const uint2 f = rt_fragment<S, D, Dc>(r_head, rank, q, warp * NG + j, kt, lane);
        r_frag[q][j][kt][0] = f.x;
        r_frag[q][j][kt][1] = f.y;
      }
  if constexpr (K::kResident)
    for (int s = 0; s < QS; ++s)
#pragma unroll 4
      for (int kt = 0; kt < KT; ++kt)
        r_slices[(s * KT + kt) * kThreads + threadIdx.x] = rt_fragment<S, D, Dc>(r_head, rank, QR + s, warp, kt, lane);

  // Stage copies: this thread's 16-byte chunks of each part of a stage (the
  // cache and states(t-1) floats of [row][cache slots, state slots][Dc], the
  // [row][state slots][Dc] storage values), as their source at step 0 and
  // their offset in the stage. A row past the batch copies the batch's last
  // row (see the top), so no copy needs a predicate, and each part's step
  // offset is one uniform value: a copy is an add and the copy.
  // Of the states only the slots the cell's backward reads (NR of NS).
  constexpr unsigned kRead = Cell::kStatesReadBack;
  constexpr int NR = read_state_count(kRead), kReadSlots = NR > 0 ? NR : 1;  // (a divisor: no copies without)
  constexpr int kCacheCopies = kTcRows * C * Dc / 4 / kThreads, kStateCopies = kTcRows * NR * Dc / 4 / kThreads;
  constexpr int kGradCopies = kTcRows * NS * Dc / 8 / kThreads;
  static_assert(kCacheCopies * kThreads == kTcRows * C * Dc / 4 && kStateCopies * kThreads == kTcRows * NR * Dc / 4 &&
                    kGradCopies * kThreads == kTcRows * NS * Dc / 8,
                "whole chunks per thread");
  const float *cache_from[kCacheCopies], *state_from[kStateCopies > 0 ? kStateCopies : 1];
  const S* grad_from[kGradCopies];
  int cache_to[kCacheCopies], state_to[kStateCopies > 0 ? kStateCopies : 1], grad_to[kGradCopies];
#pragma unroll
  for (int i = 0; i < kCacheCopies; ++i) {
    const int c = threadIdx.x + i * kThreads;
    const int r = c / (C * Dc / 4), slot = c / (Dc / 4) % C, part = c % (Dc / 4);
    cache_from[i] = &p.cache.at(0, source_row(r), slot, n, d0 + 4 * part);
    cache_to[i] = r * K::kFloatPitch + slot * Dc + 4 * part;
  }
#pragma unroll
  for (int i = 0; i < kStateCopies; ++i) {
    const int c = threadIdx.x + i * kThreads;
    const int r = c / (kReadSlots * Dc / 4), s = nth_read_state(kRead, c / (Dc / 4) % kReadSlots), part = c % (Dc / 4);
    state_from[i] = &p.states.at(0, source_row(r), s, n, d0 + 4 * part);
    state_to[i] = r * K::kFloatPitch + (C + s) * Dc + 4 * part;
  }
#pragma unroll
  for (int i = 0; i < kGradCopies; ++i) {
    const int c = threadIdx.x + i * kThreads;
    const int r = c / (NS * Dc / 8), s = c / (Dc / 8) % NS, part = c % (Dc / 8);
    // (of the gradient's states only: h alone where the output was)
    grad_from[i] = p.d_states.ptr && s < p.d_states_count ? &p.d_states.at(0, source_row(r), s, n, d0 + 8 * part)
                                                          : nullptr;
    grad_to[i] = r * K::kGradPitch + s * Dc + 8 * part;
  }
  const auto fetch = [&](int64_t t) {
    if (t >= 0) {
      unsigned char* stage = smem + int(uint32_t(t) % kStages) * K::stage_bytes();
      float* floats = reinterpret_cast<float*>(stage);
      S* grads = reinterpret_cast<S*>(stage + kTcRows * K::kFloatPitch * 4);
      const int64_t cache_step = t * p.cache.time_stride;
#pragma unroll
      for (int i = 0; i < kCacheCopies; ++i) async_copy::copy<16>(floats + cache_to[i], cache_from[i] + cache_step);
      if (kStateCopies > 0 && t > 0) {  // states(t-1)
        const int64_t states_step = (t - 1) * p.states.time_stride;
#pragma unroll
        for (int i = 0; i < kStateCopies; ++i) async_copy::copy<16>(floats + state_to[i], state_from[i] + states_step);
      }
      if (p.d_states.ptr) {
        const int64_t grad_step = t * p.d_states.time_stride;
#pragma unroll
        for (int i = 0; i < kGradCopies; ++i)
          if (grad_from[i]) async_copy::copy<16>(grads + grad_to[i], grad_from[i] + grad_step);
      }
    }
    async_copy::commit();  // one group per step, empty or not
  };
  for (int i = 0; i < kPrefetch; ++i) fetch(steps - 1 - i);
  exchange.start();
  // The sums of δ(R h)_u Rᵀ (u = T-1 … 0) go through tile u & 1 of the
  // exchange, for the filling (T-1-u)/2 of that tile.
  const auto filling = [&](int u) { return uint32_t(int(steps) - 1 - u) >> 1; };

  // Per element [group][row][dim pair]: states(t) (read as states(t-1) one
  // step earlier), the carried gradients, and the sums for δb and δs0.
  float s_next[NG][2][2][NS], carry[NG][2][2][NS] = {}, d_s0[NG][2][2][NS] = {};
  float d_bias[NG][2][2][Cell::kBiases] = {};
#pragma unroll
  for (int j = 0; j < NG; ++j)
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int e = 0; e < 2; ++e)
#pragma unroll
        for (int s = 0; s < NS; ++s)
          s_next[j][r][e][s] =
              (kRead >> s & 1u) ? p.states.at(steps - 1, source_row(row(r)), s, n, dim(j) + e) : 0.f;

  constexpr bool kDwxFromTile = Cell::kDrhIsDwx;
  S* d_wx_at[NG][2];  // where δWx does not come from the tile
#pragma unroll
  for (int j = 0; j < NG; ++j)
#pragma unroll
    for (int r = 0; r < 2; ++r) d_wx_at[j][r] = element_origin(p.d_wx, source_row(row(r)), n, dim(j));

  // The stores from the tile: this thread's 16-byte chunks of [row][gate][Dc].
  constexpr int kTileCopies = kTcRows * G * Dc / 8 / kThreads;
  static_assert(kTileCopies * kThreads == kTcRows * G * Dc / 8, "whole chunks per thread");
  S *rh_to[kTileCopies], *wx_to[kTileCopies];
  int tile_from[kTileCopies];
#pragma unroll
  for (int i = 0; i < kTileCopies; ++i) {
    const int c = threadIdx.x + i * kThreads;
    const int r = c / (G * Dc / 8), g = c / (Dc / 8) % G, d = d0 + 8 * (c % (Dc / 8));
    tile_from[i] = r * K::kDeltaPitch + g * Dc + d - d0;
    rh_to[i] = &p.d_rh.at(0, source_row(r), g, n, d);
    wx_to[i] = &p.d_wx.at(0, source_row(r), g, n, d);
  }
  const auto store_tile = [&](int64_t t) {  // δ(R h)_t, complete in tile t & 1
    const S* tile = delta_tiles + int(t & 1) * kTcRows * K::kDeltaPitch;
#pragma unroll
    for (int i = 0; i < kTileCopies; ++i) {
      const uint4 v = *reinterpret_cast<const uint4*>(tile + tile_from[i]);
      *reinterpret_cast<uint4*>(rh_to[i] + t * p.d_rh.time_stride) = v;
      if constexpr (kDwxFromTile) *reinterpret_cast<uint4*>(wx_to[i] + t * p.d_wx.time_stride) = v;
    }
  };

  // δh from δ(R h)_u: this CTA's share of K multiplied into partial sums for
  // every CTA's slice (send_sums), those of the other CTAs sent to them, then
  // the sums the others sent for this CTA's dims added (add_received_sums).
  // The MMA's independent accumulator sets: one per CTA slice and group of 8
  // dims, each split into kChains sets over the k-tiles until there are four
  // (with one CTA per head: four chains where R leaves registers for them).
  constexpr int kOutGroups = kCluster * NG;
  constexpr int kChains = [] {
    if (kCluster == 1) return KT % 4 == 0 && K::Tiling::kRRegisters <= 64 ? 4 : KT % 2 == 0 ? 2 : 1;
    int c = 1;
    while (c * kOutGroups < 4 && KT % (2 * c) == 0) c *= 2;
    return c;
  }();
  const auto send_sums_at_once = [&](int u, auto& dh) {  // generic: compiled where called
    const S* delta = delta_tiles + (u & 1) * kTcRows * K::kDeltaPitch;
    float acc[kChains][kCluster][NG][4] = {};
#pragma unroll
    for (int kt = 0; kt < KT; ++kt) {
      uint32_t a[4];
      mma::load_a_fragment(a, delta + 16 * kt, K::kDeltaPitch);
#pragma unroll
      for (int q = 0; q < kCluster; ++q)
#pragma unroll
        for (int j = 0; j < NG; ++j) mma::mma_16816<S>(acc[kt % kChains][q][j], a, r_frag[q][j][kt]);
    }
    exchange.expect(u & 1);  // nothing with one CTA per head
    float* received = sums_in + (u & 1) * (kCluster - 1) * kTcRows * K::kSumPitch;
#pragma unroll
    for (int q = 0; q < kCluster; ++q)
#pragma unroll
      for (int j = 0; j < NG; ++j) {
        float sum[4];
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          sum[c] = acc[0][q][j][c];
#pragma unroll
          for (int x = 1; x < kChains; ++x) sum[c] += acc[x][q][j][c];
        }
        if (q == rank) {
#pragma unroll
          for (int c = 0; c < 4; ++c) dh[j][c] = sum[c];
        } else {  // into this CTA's slot of CTA q's tile (the slots are the ranks but q, in order)
          float* to = received + (rank < q ? rank : rank - 1) * kTcRows * K::kSumPitch + cta_dim(j);
#pragma unroll
          for (int r = 0; r < 2; ++r)
            exchange.store_to(q, u & 1, to + row(r) * K::kSumPitch, make_float2(sum[2 * r], sum[2 * r + 1]));
        }
      }
  };
  // A wide head's pass: slice after slice, each's sums sent at once.
  uint32_t streamed = 0;  // slices taken from the ring so far
  const auto send_sums_by_slice = [&](int u, auto& dh) {  // generic: compiled where called
    static_assert(!K::kWide || NG == 1, "wide heads have an even gate count");
    const S* delta = delta_tiles + (u & 1) * kTcRows * K::kDeltaPitch;
    uint32_t a[KT][4];
#pragma unroll
    for (int kt = 0; kt < KT; ++kt) mma::load_a_fragment(a[kt], delta + 16 * kt, K::kDeltaPitch);
    exchange.expect(u & 1);
    float* received = sums_in + (u & 1) * (kCluster - 1) * kTcRows * K::kSumPitch;
    const auto deliver = [&](int q, const float (&chains)[4][4]) {
      float sum[4];
#pragma unroll
      for (int c = 0; c < 4; ++c) sum[c] = (chains[0][c] + chains[1][c]) + (chains[2][c] + chains[3][c]);
      if (q == rank) {
#pragma unroll
        for (int c = 0; c < 4; ++c) dh[0][c] = sum[c];
      } else {
        float* to = received + (rank < q ? rank : rank - 1) * kTcRows * K::kSumPitch + cta_dim(0);
#pragma unroll
        for (int r = 0; r < 2; ++r)
          exchange.store_to(q, u & 1, to + row(r) * K::kSumPitch, make_float2(sum[2 * r], sum[2 * r + 1]));
      }
    };
#pragma unroll
    for (int q = 0; q < QR; ++q) {
      float chains[4][4] = {};
#pragma unroll
      for (int kt = 0; kt < KT; ++kt) mma::mma_16816<S>(chains[kt % 4], a[kt], r_frag[q][0][kt]);
      deliver(q, chains);
    }
#pragma unroll
    for (int s = 0; s < QS; ++s) {
      const uint2* slice = K::kStreams ? ring.template acquire<uint2>(streamed) : r_slices + s * KT * kThreads;
      float chains[4][4] = {};
#pragma unroll
      for (int kt = 0; kt < KT; ++kt) {
        const uint2 f = slice[kt * kThreads + threadIdx.x];
        const uint32_t b[2] = {f.x, f.y};
        mma::mma_16816<S>(chains[kt % 4], a[kt], b);
      }
      if constexpr (K::kStreams) ring.release(streamed++);
      deliver(QR + s, chains);
    }
  };
  const auto send_sums = [&](int u, float (&dh)[NG][4]) {
    if constexpr (K::kWide) send_sums_by_slice(u, dh); else send_sums_at_once(u, dh);
  };
  const auto add_received_sums = [&](int u, float (&dh)[NG][4]) {
    if constexpr (kCluster > 1) {
      exchange.wait(u & 1, filling(u));
      const float* in = sums_in + (u & 1) * (kCluster - 1) * kTcRows * K::kSumPitch;
#pragma unroll
      for (int slot = 0; slot < kCluster - 1; ++slot)
#pragma unroll
        for (int j = 0; j < NG; ++j)
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            const float2 v =
                *reinterpret_cast<const float2*>(in + (slot * kTcRows + row(r)) * K::kSumPitch + cta_dim(j));
            dh[j][2 * r] += v.x;
            dh[j][2 * r + 1] += v.y;
          }
    }
    if (p.gradient_clip > 0.f)
#pragma unroll
      for (int j = 0; j < NG; ++j)
#pragma unroll
        for (int c = 0; c < 4; ++c) dh[j][c] = cells::clamp_(dh[j][c], -p.gradient_clip, p.gradient_clip);
  };

  // Step t. `last` (t = T-1: nothing comes back through R, d_last comes in) and
  // `initial` (t = 0: the previous states are s0) are bools in the first and
  // the final step and std::false_type in the loop between, whose code then
  // has neither case: in the loop their address arithmetic and predicated
  // loads would run every step (with per-copy predicates in the fetch, 661
  // SASS instructions per warp and step at 12x64 against 466 without either).
  const auto step = [&](int t, auto last, auto initial) {
    if constexpr (kPrefetch > 0) async_copy::wait<kPrefetch - 1>();  // this thread's copies of step t are in
    sync_step();           // everyone's are; the CTA's δ(R h)_{t+1} is in its tile
    fetch(t - kPrefetch);  // into the stage step t+1 used (kPrefetch 0: its own, read after the MMA)
    float dh[NG][4] = {};
    if (!last) {
      if (through_r) send_sums(t + 1, dh);
      store_tile(t + 1);  // while the others' sums are on their way
      if (through_r) add_received_sums(t + 1, dh);
    }
    if constexpr (kPrefetch == 0) {
      async_copy::wait<0>();  // this thread's copies of step t are in
      sync_step();            // everyone's are
    }

    const unsigned char* stage = smem + int(uint32_t(t) % kStages) * K::stage_bytes();
    const float* floats = reinterpret_cast<const float*>(stage);
    const S* grads = reinterpret_cast<const S*>(stage + kTcRows * K::kFloatPitch * 4);
    S* delta_out = delta_tiles + int(t & 1) * kTcRows * K::kDeltaPitch;
#pragma unroll
    for (int j = 0; j < NG; ++j)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int64_t b = source_row(row(r));
        const int d = dim(j);
        const float* f = floats + row(r) * K::kFloatPitch + d - d0;
        const bool from_initial = initial || (kResets && p.reset.at(b, t));
        const bool reset_next = kResets && !last && p.reset.at(b, t + 1);
        // Both dims of the pair at once: 8-byte shared loads, 4-byte stores.
        float cache[2][C], s_prev[2][NS], ds[2][NS], dwx[2][G], drh[2][G];
        float s_next_prev[NS][2];  // states(t-1): step t-1's s_next
#pragma unroll
        for (int c = 0; c < C; ++c) {
          const float2 v = *reinterpret_cast<const float2*>(f + c * Dc);
          cache[0][c] = v.x;
          cache[1][c] = v.y;
        }
#pragma unroll
        for (int s = 0; s < NS; ++s) {
          const bool copied = (kRead >> s & 1u) && !initial;  // the stage holds the read slots only
          const float2 prev = copied ? *reinterpret_cast<const float2*>(f + (C + s) * Dc) : make_float2(0.f, 0.f);
          const bool external = p.d_states.ptr && s < p.d_states_count;
          const float2 ext = external ? mma::unpack<S>(*reinterpret_cast<const uint32_t*>(
                                            grads + row(r) * K::kGradPitch + s * Dc + d - d0))
                                      : make_float2(0.f, 0.f);
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            s_prev[e][s] = from_initial ? p.s0.at(0, b, s, n, d + e) : (e ? prev.y : prev.x);
            ds[e][s] = carry[j][r][e][s] + (s == 0 ? dh[j][2 * r + e] : 0.f);
            if (reset_next) {  // step t+1 started from s0: what reaches s_t belongs to s0
              d_s0[j][r][e][s] += ds[e][s];
              ds[e][s] = 0.f;
            }
            ds[e][s] += e ? ext.y : ext.x;
            if (last && p.d_last.ptr) ds[e][s] += static_cast<float>(p.d_last.at(0, b, s, n, d + e));
          }
          s_next_prev[s][0] = prev.x;
          s_next_prev[s][1] = prev.y;
        }
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          float db[Cell::kBiases], ds_prev[NS];
          Cell::template backward<float, cells::FastMath>(cache[e], s_prev[e], s_next[j][r][e], ds[e],
                                                          dwx[e], drh[e], db, ds_prev);
#pragma unroll
          for (int k = 0; k < Cell::kBiases; ++k) d_bias[j][r][e][k] += db[k];
#pragma unroll
          for (int s = 0; s < NS; ++s) {
            carry[j][r][e][s] = ds_prev[s];
            s_next[j][r][e][s] = s_next_prev[s][e];
          }
        }
#pragma unroll
        for (int g = 0; g < G; ++g) {
          *reinterpret_cast<uint32_t*>(delta_out + row(r) * K::kDeltaPitch + g * Dc + d - d0) =
              mma::pack<S>(drh[0][g], drh[1][g]);
          if constexpr (!kDwxFromTile)
            *reinterpret_cast<uint32_t*>(element_at(d_wx_at[j][r], p.d_wx, t, g)) = mma::pack<S>(dwx[0][g], dwx[1][g]);
        }
      }
  };
  const int first = int(steps) - 1;  // the launcher checks T < 2^31
  step(first, true, first == 0);
  for (int t = first - 1; t > 0; --t) step(t, std::false_type{}, std::false_type{});
  if (first > 0) step(0, false, true);
  async_copy::wait<0>();
  sync_step();  // the CTA's δ(R h)_0 is in its tile
  float dh[NG][4] = {};
  if (through_r) send_sums(0, dh);
  store_tile(0);
  if (through_r) add_received_sums(0, dh);  // the last exchange: every CTA waits for it
#pragma unroll
  for (int j = 0; j < NG; ++j)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int64_t b = b0 + row(r);
      if (b >= batch) continue;
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int d = dim(j) + e;
#pragma unroll
        for (int s = 0; s < NS; ++s)
          p.d_s0.at(0, b, s, n, d) += d_s0[j][r][e][s] + carry[j][r][e][s] + (s == 0 ? dh[j][2 * r + e] : 0.f);
#pragma unroll
        for (int k = 0; k < Cell::kBiases; ++k) p.d_bias.at(0, b, k, n, d) += d_bias[j][r][e][k];
      }
    }
}

}  // namespace flashrnn::fused

// The tensor-core forward: one persistent CTA (or cluster of kCluster CTAs)
// per (head, 16 batch rows) runs all T steps (tiling in tc_tiling.h).
//
// A head too large for R in registers (LSTM, sLSTM over 256 dims) splits K
// too: two warps share each group of dims, each multiplying half of h by its
// half of R (part of which it keeps in shared memory), and they add their
// partial sums through shared memory, each finishing one of the two rows of
// the thread's elements: half the chain of MMAs and half the cell per warp.
//
// Per step:  out[b][(g, d)] = Σ_k h_{t-1}[b][k] · R[g][d][k]
// as m16n8k16 MMAs with M = the 16 batch rows, N = this warp's (gate, dim)
// columns, K = the head dim. R is the B operand and lives in registers for
// the whole sequence; h_{t-1} is the A operand, read with ldmatrix from a
// double-buffered shared tile of the whole head that the previous step wrote
// (every CTA of a cluster its dims, into every CTA's tile), so a step needs
// one barrier (a wide head whose K parts and k-tiles align with the CTAs'
// slices gets h by slice instead: slice_exchange.cuh, and multiplies each
// CTA's slice as soon as it is in). Wx of step t+kPrefetch is copied into a
// ring of shared stages with cp.async while step t computes. The accumulators come out holding every
// gate of the thread's own elements, so the cell runs on registers, with c, n,
// m carried in fp32 registers from step to step.
//
// For an LSTM or sLSTM head split over a cluster with R in registers, what a
// step saves (the output states; where a backward follows also the states it
// reads, the cache and h for δR's GEMM) goes through a shared save tile
// (TcForward::kSaveTile): step t writes it, step t+1 copies it to global
// memory in 16-byte chunks of a row once it has published its own h (a
// thread's own stores are 8 rows of 4 or 8 bytes each; LSTM 3x256 on one
// H200: recording forward 1.24 ms through the tile, 1.42 from registers,
// inference forward 0.99 against 1.24). Other heads store from registers.
#pragma once

#include "async_copy.cuh"
#include "fused/cluster_exchange.cuh"
#include "fused/slice_exchange.cuh"
#include "fused/element_pointer.cuh"
#include "fused/mma.cuh"
#include "fused/tc_tiling.h"
#include "pointwise.h"

namespace flashrnn::fused {

// kResets: whether a reset mask is given. Without one the per-step code has no
// mask loads and no branches on them (they cost ~20 % of a step even predicated off).
// kSaves: whether a backward will follow. Without one (inference) a step writes
// only the output: no fp32 states, gate cache or h_gemm (14 of a thread's 18
// stores per step at 4 gates).
template <class Cell, class S, int D, int kCluster, bool kResets, bool kSaves>
__global__ void __launch_bounds__(TcTiling<Cell, D, kCluster>::kThreads)
    tc_forward_kernel(ForwardStepParams<float, S> p, const S* r_heads) {
  // A head dim's two tilings (with clusters and without) are each run by one
  // architecture: its code alone is compiled there, the other's body is left
  // out (about a third of the kernels' compile time; fused_backend.cpp asserts
  // the choice before launching).
#if defined(__CUDA_ARCH__)
  if constexpr (!tc_tiling_runs<Cell>(D, kCluster, __CUDA_ARCH__ >= 900)) {
    __trap();
    return;
  }
#endif
  using K = TcForward<Cell, S, D, kCluster>;
  constexpr int G = Cell::kGates, NG = K::kGroups, Dc = K::kCtaDims;
  // K split over KS warps per group of dims, KW k-tiles each, the first KR in registers.
  constexpr int KS = K::Tiling::kKSplit, KW = D / 16 / KS, KR = K::Tiling::kRegisterRKTiles;
  constexpr int RW = 2 / KS;  // rows of the thread's elements it finishes (of 2)
  constexpr int kThreads = K::Tiling::kThreads, kStages = K::kStages, kPrefetch = K::kPrefetch;
  using Exchange = ClusterExchange<kCluster>;
  // Whether h comes by CTA slice (tc_slice_exchange), each waited for just
  // before its k-tiles: kSliceTiles of them, a part's first slice part_slice.
  constexpr bool kSliced = K::kSliceExchange;
  constexpr int kSliceTiles = Dc / 16;
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ uint64_t tile_barriers[kSliced ? 2 * kCluster : 2];  // the cluster's exchange
  S* wx_stages = reinterpret_cast<S*>(smem);                      // [kStages][16][kWxPitch]
  S* h_tiles = wx_stages + kStages * kTcRows * K::kWxPitch;       // [2][kHTileElements] (K::h_offset)
  uint2* r_shared = reinterpret_cast<uint2*>(h_tiles + 2 * K::kHTileElements);  // [KW-KR][NG][G][kThreads]
  float2* partials = reinterpret_cast<float2*>(r_shared + (KW - KR) * NG * G * kThreads);  // [dim warp][KS][NG][G][32]
  float* save_tiles = reinterpret_cast<float*>(smem + K::cluster_counted_bytes());  // [2][kSaveSlots][16][kSavePitch]
  constexpr int kSaveSlots = K::save_slots(kSaves);
  const Exchange exchange(smem, tile_barriers, kTcRows * D * sizeof(S));
  const SliceExchange<kCluster> slices(tile_barriers, K::kSliceElements * sizeof(S));

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32 % K::Tiling::kDimWarps;
  const int k_part = threadIdx.x / 32 / K::Tiling::kDimWarps;  // which KW k-tiles of K: 16·KW·k_part …
  const int part_slice = kSliced ? 16 * KW * k_part / Dc : 0;
  // The grid's x is (batch tile, CTA of the head's cluster); this CTA's dims start at d0.
  const int d0 = int(blockIdx.x % kCluster) * Dc;
  const int64_t n = blockIdx.y, b0 = int64_t(blockIdx.x / kCluster) * kTcRows;
  const int64_t batch = p.extent.batch, steps = p.extent.steps;
  // This thread's elements: rows lane/4 (+8), dims dim(j) (+1) for each group j;
  // it finishes the rows row(r) for r = owned(0 … RW-1): both, or with K split its part's.
  const auto row = [&](int r) { return lane / 4 + 8 * r; };
  const auto owned = [&](int rr) { return KS == 1 ? rr : k_part; };
  const auto dim = [&](int j) { return d0 + 8 * (warp * NG + j) + 2 * (lane % 4); };

  // R as B fragments: column (g, d = d0 + 8·group + lane/4), k = 16·(KW·k_part +
  // kt) + 2·(lane%4) (+1, +8, +9) for the part's k-tiles kt = 0 … KW-1; the
  // first KR in registers, the rest (a head too large for them) in shared
  // memory, where each thread keeps its own: no barrier before they are read.
  uint32_t r_frag[NG][G][KR][2];
  const S* r_head = r_heads + n * G * D * D + 16 * KW * k_part;
  const auto r_at = [&](int j, int g, int kt) {
    return reinterpret_cast<const uint32_t*>(r_head + int64_t(g * D + d0 + 8 * (warp * NG + j) + lane / 4) * D +
                                             16 * kt + 2 * (lane % 4));
  };
  const auto shared_r = [&](int j, int g, int kt) -> uint2& {
    return r_shared[((kt - KR) * NG + j) * G * kThreads + g * kThreads + threadIdx.x];
  };
#pragma unroll
  for (int j = 0; j < NG; ++j)
#pragma unroll
    for (int g = 0; g < G; ++g) {
#pragma unroll
      for (int kt = 0; kt < KR; ++kt) {
        r_frag[j][g][kt][0] = r_at(j, g, kt)[0];
        r_frag[j][g][kt][1] = r_at(j, g, kt)[4];
      }
#pragma unroll 4
      for (int kt = KR; kt < KW; ++kt) shared_r(j, g, kt) = make_uint2(r_at(j, g, kt)[0], r_at(j, g, kt)[4]);
    }

  // Biases and the carried states of the thread's elements, [group][owned row][dim pair].
  float bias[NG][2][Cell::kBiases];
  float state[NG][RW][2][Cell::kStates];
#pragma unroll
  for (int j = 0; j < NG; ++j)
#pragma unroll
    for (int e = 0; e < 2; ++e)
#pragma unroll
      for (int k = 0; k < Cell::kBiases; ++k)
        bias[j][e][k] = static_cast<float>(p.bias.at(0, 0, k, n, dim(j) + e));
#pragma unroll
  for (int j = 0; j < NG; ++j)
#pragma unroll
    for (int rr = 0; rr < RW; ++rr) {
      const int64_t b = b0 + row(owned(rr));
#pragma unroll
      for (int e = 0; e < 2; ++e)
#pragma unroll
        for (int s = 0; s < Cell::kStates; ++s)
          state[j][rr][e][s] = b < batch ? p.s0.at(0, b, s, n, dim(j) + e) : 0.f;
      if (kSaves && p.h_gemm.ptr && b < batch)
        *reinterpret_cast<uint32_t*>(&p.h_gemm.at(0, b, 0, n, dim(j))) =
            mma::pack<S>(state[j][rr][0][0], state[j][rr][1][0]);
    }
  // Step 0 reads h_{-1} of the whole head from tile 1: every CTA loads it from s0.
  for (int i = threadIdx.x; i < kTcRows * D / 2; i += kThreads) {
    const int r = i / (D / 2), d = 2 * (i % (D / 2));
    const int64_t b = b0 + r;
    const float h0 = b < batch ? float(p.s0.at(0, b, 0, n, d)) : 0.f;
    const float h1 = b < batch ? float(p.s0.at(0, b, 0, n, d + 1)) : 0.f;
    *reinterpret_cast<uint32_t*>(h_tiles + K::kHTileElements + K::h_offset(r, d)) = mma::pack<S>(h0, h1);
  }

  // Where the thread's elements go, [group][owned row]; rows past the batch stay null.
  float *states_at[NG][RW] = {}, *cache_at[NG][RW] = {};
  S *out_at[NG][RW] = {}, *h_gemm_at[NG][RW] = {};
#pragma unroll
  for (int j = 0; j < NG; ++j)
#pragma unroll
    for (int rr = 0; rr < RW; ++rr) {
      const int64_t b = b0 + row(owned(rr));
      if (b >= batch) continue;
      states_at[j][rr] = element_origin(p.states, b, n, dim(j));
      cache_at[j][rr] = element_origin(p.cache, b, n, dim(j));
      out_at[j][rr] = element_origin(p.states_out, b, n, dim(j));
      h_gemm_at[j][rr] = element_origin(p.h_gemm, b, n, dim(j));
    }

  // Wx copies: this thread's 16-byte chunks of a stage [row][gate][this CTA's
  // Dc dims]. A row past the batch copies the batch's last row (what it
  // computes is never stored), so no copy needs a predicate.
  constexpr int kChunksPerRow = Dc / 8, kChunks = kTcRows * G * kChunksPerRow;
  static_assert(kChunks % kThreads == 0, "whole chunks per thread");
  constexpr int kCopies = kChunks / kThreads;
  const S* copy_from[kCopies];
  int copy_to[kCopies];
#pragma unroll
  for (int i = 0; i < kCopies; ++i) {
    const int c = threadIdx.x + i * kThreads;
    const int r = c / (G * kChunksPerRow), g = c / kChunksPerRow % G, part = c % kChunksPerRow;
    copy_from[i] = &p.wx.at(0, b0 + r < batch ? b0 + r : batch - 1, g, n, d0 + 8 * part);
    copy_to[i] = r * K::kWxPitch + g * Dc + 8 * part;
  }
  // Whether this kernel's saves go through the save tiles: only in a
  // cluster, where the copy-out runs while the CTA waits for the others' h
  // (with one CTA per head the step's barrier waits for it: through a tile
  // the LSTM 24x32 and 48x16 forwards are 10 % and 13 % slower on one H200).
  constexpr bool kTiled = K::kSaveTile;
  // The copies out of a save tile, 16-byte chunks of a row: the output
  // states (8 dims, converted to S), the states the backward reads and the
  // cache (4 dims of floats), h for δR's GEMM (8 dims). A chunk's source in
  // the tile and its destination at step 0 (null: the chunk is not this
  // thread's, or its row is past the batch); a store adds its tensor's step.
  constexpr int NS = Cell::kStates, C = Cell::kCache, kSlotFloats = kTcRows * K::kSavePitch;
  constexpr unsigned kRead = Cell::kStatesReadBack;
  constexpr int NR = read_state_count(kRead), kReadSlots = NR > 0 ? NR : 1;  // (a divisor: no copies without)
  constexpr int kOutChunks = NS * kTcRows * Dc / 8, kStateChunks = NR * kTcRows * Dc / 4;
  constexpr int kCacheChunks = C * kTcRows * Dc / 4, kHChunks = kTcRows * Dc / 8;
  constexpr int kOutCopies = kTiled ? copies_per_thread(kOutChunks, kThreads) : 0;
  constexpr int kStateCopies = kTiled && kSaves ? copies_per_thread(kStateChunks, kThreads) : 0;
  constexpr int kCacheCopies = kTiled && kSaves ? copies_per_thread(kCacheChunks, kThreads) : 0;
  constexpr int kHCopies = kTiled && kSaves ? copies_per_thread(kHChunks, kThreads) : 0;
  S* out_to[kOutCopies > 0 ? kOutCopies : 1];
  float* state_to[kStateCopies > 0 ? kStateCopies : 1];
  float* cache_to[kCacheCopies > 0 ? kCacheCopies : 1];
  S* h_to[kHCopies > 0 ? kHCopies : 1];
  int out_from[kOutCopies > 0 ? kOutCopies : 1], state_from[kStateCopies > 0 ? kStateCopies : 1];
  int cache_from[kCacheCopies > 0 ? kCacheCopies : 1], h_from[kHCopies > 0 ? kHCopies : 1];
  // One part's copies: chunk c of `chunks`, `per_row` to a (part slot k,
  // row), comes from tile slot tile_slot(k) and goes to tensor slot
  // tensor_slot(k) of `dst` (a null tensor: none).
  const auto plan = [&](auto copies, auto& from, auto& to, const auto& dst, int chunks, int per_row,
                        auto tile_slot, auto tensor_slot) {
#pragma unroll
    for (int i = 0; i < decltype(copies)::value; ++i) {
      const int c = threadIdx.x + i * kThreads;
      const int k = c / (per_row * kTcRows), r = c / per_row % kTcRows, dd = c % per_row * (Dc / per_row);
      from[i] = tile_slot(k) * kSlotFloats + r * K::kSavePitch + dd;
      to[i] = c < chunks && b0 + r < batch && dst.ptr ? &dst.at(0, b0 + r, tensor_slot(k), n, d0 + dd) : nullptr;
    }
  };
  const auto same = [](int k) { return k; };
  const auto read_slot = [&](int k) { return nth_read_state(kRead, k % kReadSlots); };
  plan(std::integral_constant<int, kOutCopies>{}, out_from, out_to, p.states_out, kOutChunks, Dc / 8, same, same);
#pragma unroll
  for (int i = 0; i < kOutCopies; ++i)  // of the output's slots only its states (h alone: the first)
    if ((threadIdx.x + i * kThreads) / (Dc / 8 * kTcRows) >= p.out_states) out_to[i] = nullptr;
  plan(std::integral_constant<int, kStateCopies>{}, state_from, state_to, p.states, kStateChunks, Dc / 4,
       read_slot, read_slot);
  plan(std::integral_constant<int, kCacheCopies>{}, cache_from, cache_to, p.cache, kCacheChunks, Dc / 4,
       [](int k) { return NS + k; }, same);
  plan(std::integral_constant<int, kHCopies>{}, h_from, h_to, p.h_gemm, kHChunks, Dc / 8,
       [](int) { return NS + C; }, [](int) { return 0; });
  // Step t's saves, complete in save tile t & 1 (after the next barrier).
  const auto store_saves = [&](int64_t t) {
    const float* tile = save_tiles + int(t & 1) * kSaveSlots * kSlotFloats;
    const auto eight_dims = [&](int from) {  // 8 floats of the tile as 8 S values
      const float4 lo = *reinterpret_cast<const float4*>(tile + from);
      const float4 hi = *reinterpret_cast<const float4*>(tile + from + 4);
      return make_uint4(mma::pack<S>(lo.x, lo.y), mma::pack<S>(lo.z, lo.w), mma::pack<S>(hi.x, hi.y),
                        mma::pack<S>(hi.z, hi.w));
    };
#pragma unroll
    for (int i = 0; i < kOutCopies; ++i)
      if (out_to[i]) *reinterpret_cast<uint4*>(out_to[i] + t * p.states_out.time_stride) = eight_dims(out_from[i]);
#pragma unroll
    for (int i = 0; i < kStateCopies; ++i)
      if (state_to[i])
        *reinterpret_cast<float4*>(state_to[i] + t * p.states.time_stride) =
            *reinterpret_cast<const float4*>(tile + state_from[i]);
#pragma unroll
    for (int i = 0; i < kCacheCopies; ++i)
      if (cache_to[i])
        *reinterpret_cast<float4*>(cache_to[i] + t * p.cache.time_stride) =
            *reinterpret_cast<const float4*>(tile + cache_from[i]);
#pragma unroll
    for (int i = 0; i < kHCopies; ++i)  // h fed to step t+1
      if (h_to[i] && t + 1 < steps)
        *reinterpret_cast<uint4*>(h_to[i] + (t + 1) * p.h_gemm.time_stride) = eight_dims(h_from[i]);
  };

  const auto fetch_wx = [&](int64_t t) {
    if (t < steps) {
      S* stage = wx_stages + int(uint32_t(t) % kStages) * kTcRows * K::kWxPitch;
      const int64_t wx_step = t * p.wx.time_stride;
#pragma unroll
      for (int i = 0; i < kCopies; ++i) async_copy::copy<16>(stage + copy_to[i], copy_from[i] + wx_step);
    }
    async_copy::commit();  // one group per step, empty or not, so the counting holds
  };
  for (int t = 0; t < kPrefetch; ++t) fetch_wx(t);
  if constexpr (kSliced)
    slices.start();
  else
    exchange.start();

  // The forward clip's bounds, infinite without one (clamp_ keeps a NaN): a
  // clamp on every step instead of a branch.
  const float clip = p.forward_clip > 0.f ? p.forward_clip : INFINITY;
  for (int t = 0; t < int(steps); ++t) {  // the launcher checks T < 2^31
    async_copy::wait<kPrefetch - 1>();  // this thread's copies of step t are in
    __syncthreads();                    // everyone's are; h_{t-1} is written (one CTA per head)
    if (!kSliced && t > 0) exchange.wait((t - 1) & 1, uint32_t(t - 1) >> 1);  // by every CTA of a cluster
    fetch_wx(t + kPrefetch);            // into the stage step t-1 used

    float acc[NG][G][4] = {};
    const S* h_prev = h_tiles + int((t + 1) & 1) * K::kHTileElements;
    // The A fragment of the part's k-tile kt of h_{t-1} (by slice: once its slice is in).
    const auto load_h = [&](uint32_t(&a)[4], int kt) {
      if constexpr (kSliced) {
        if (t > 0 && kt % kSliceTiles == 0)
          slices.wait((t - 1) & 1, part_slice + kt / kSliceTiles, uint32_t(t - 1) >> 1);
        mma::load_a_fragment(a, h_prev + (part_slice + kt / kSliceTiles) * K::kSliceElements + 16 * (kt % kSliceTiles),
                             K::kSlicePitch);
      } else {
        mma::load_a_fragment(a, h_prev + 16 * (KW * k_part + kt), K::kHPitch);
      }
    };
#pragma unroll
    for (int kt = 0; kt < KR; ++kt) {
      uint32_t a[4];
      load_h(a, kt);
#pragma unroll
      for (int j = 0; j < NG; ++j)
#pragma unroll
        for (int g = 0; g < G; ++g) mma::mma_16816<S>(acc[j][g], a, r_frag[j][g][kt]);
    }
#pragma unroll
    for (int kt = KR; kt < KW; ++kt) {
      uint32_t a[4];
      load_h(a, kt);
#pragma unroll
      for (int j = 0; j < NG; ++j)
#pragma unroll
        for (int g = 0; g < G; ++g) {
          const uint2 r = shared_r(j, g, kt);
          const uint32_t b[2] = {r.x, r.y};
          mma::mma_16816<S>(acc[j][g], a, b);
        }
    }

    if constexpr (KS == 2) {
      // Each part hands the other its sums for the other's row (acc[..][2r], [2r+1]
      // hold row r) and adds the other's for its own, in slots [0, 1].
      const int mine = (warp * KS + k_part) * NG * G, theirs = (warp * KS + 1 - k_part) * NG * G;
#pragma unroll
      for (int j = 0; j < NG; ++j)
#pragma unroll
        for (int g = 0; g < G; ++g)
          partials[(mine + j * G + g) * 32 + lane] =
              k_part ? make_float2(acc[j][g][0], acc[j][g][1]) : make_float2(acc[j][g][2], acc[j][g][3]);
      mma::sync_warps(1 + warp, 64);  // the two warps of this group of dims
#pragma unroll
      for (int j = 0; j < NG; ++j)
#pragma unroll
        for (int g = 0; g < G; ++g) {
          const float2 other = partials[(theirs + j * G + g) * 32 + lane];
          acc[j][g][0] = (k_part ? acc[j][g][2] : acc[j][g][0]) + other.x;
          acc[j][g][1] = (k_part ? acc[j][g][3] : acc[j][g][1]) + other.y;
        }
    }

    const bool more = t + 1 < int(steps);
    const S* wx = wx_stages + int(uint32_t(t) % kStages) * kTcRows * K::kWxPitch;
    S* h_next = h_tiles + int(t & 1) * K::kHTileElements;
    if (!kSliced) exchange.expect(t & 1);
    // Each element's cell, the h it feeds the next step and, through a save
    // tile, its saves, with no branch from the first element to the last
    // (kResets aside): with one per element (the forward clip's) the compiler
    // runs each element's chain alone (sLSTM 12x64 forward on one H200:
    // 0.66 ms without, 1.01 with).
    float h_fed[NG][RW][2], cache[NG][RW][2][Cell::kCache];
    // In a cluster h goes out before the saves reach global memory: the other
    // CTAs wait for it, nobody waits for those (12x64 LSTM recording forward
    // 18 % shorter than after them); in one CTA after the global stores (the
    // step's barrier waits for every thread either way, and 24x32 runs 13-18 %
    // slower with h first; both on one H100). Where a row's h goes to 4 or more
    // CTAs, as soon as the row's cells are done (LSTM 3x256 forward 0.97 ms,
    // 1.26 after all cells); to 2, once every element's cell is (the cells'
    // chains interleave: sLSTM 12x64 recording forward 0.99 ms, 1.13 row by
    // row; both on one H200). The last step's h is read by no one but goes
    // out too: no branch (each CTA waits for it before it exits).
    // By slice each thread stores its h into its own tile, and the slice
    // goes out once the CTA's threads all have.
    constexpr bool kPublishEachRow = kCluster >= 4;
    const auto publish_h = [&](int j, int rr, const float (&h)[2]) {
      S* at = h_next + K::h_offset(row(owned(rr)), dim(j));
      if constexpr (kSliced)
        *reinterpret_cast<uint32_t*>(at) = mma::pack<S>(h[0], h[1]);
      else
        exchange.store(t & 1, at, mma::pack<S>(h[0], h[1]));
    };
#pragma unroll
    for (int j = 0; j < NG; ++j)
#pragma unroll
      for (int rr = 0; rr < RW; ++rr) {
        const int r = owned(rr);  // the accumulators of row r are acc[..][2·rr], [2·rr+1]
        const int64_t b = b0 + row(r);
        const int d = dim(j);
        if (kResets && b < batch && t > 0 && p.reset.at(b, t))
#pragma unroll
          for (int e = 0; e < 2; ++e)
#pragma unroll
            for (int s = 0; s < Cell::kStates; ++s) state[j][rr][e][s] = p.s0.at(0, b, s, n, d + e);
        float wx_e[2][G], rh_e[2][G];
#pragma unroll
        for (int g = 0; g < G; ++g) {
          const float2 v =
              mma::unpack<S>(*reinterpret_cast<const uint32_t*>(wx + row(r) * K::kWxPitch + g * Dc + d - d0));
          wx_e[0][g] = v.x;
          wx_e[1][g] = v.y;
          rh_e[0][g] = acc[j][g][2 * rr];
          rh_e[1][g] = acc[j][g][2 * rr + 1];
        }
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          float next[Cell::kStates];
          Cell::template forward<float, cells::FastMath>(wx_e[e], rh_e[e], bias[j][e], state[j][rr][e], next,
                                                         cache[j][rr][e]);
          next[0] = cells::clamp_(next[0], -clip, clip);
#pragma unroll
          for (int s = 0; s < Cell::kStates; ++s) state[j][rr][e][s] = next[s];
          h_fed[j][rr][e] = next[0];
        }
        if (kResets && more && b < batch && p.reset.at(b, t + 1))
#pragma unroll
          for (int e = 0; e < 2; ++e) h_fed[j][rr][e] = p.s0.at(0, b, 0, n, d + e);
        if (kPublishEachRow) publish_h(j, rr, h_fed[j][rr]);  // (implies a cluster)
        if constexpr (kTiled) {  // rows past the batch too: their chunks are not copied out
          float* save = save_tiles + int(t & 1) * kSaveSlots * kSlotFloats + row(r) * K::kSavePitch + d - d0;
          const auto save_pair = [&](int slot, float x, float y) {
            *reinterpret_cast<float2*>(save + slot * kSlotFloats) = make_float2(x, y);
          };
#pragma unroll
          for (int s = 0; s < NS; ++s) save_pair(s, state[j][rr][0][s], state[j][rr][1][s]);
          if (kSaves) {
#pragma unroll
            for (int c = 0; c < C; ++c) save_pair(NS + c, cache[j][rr][0][c], cache[j][rr][1][c]);
            save_pair(NS + C, h_fed[j][rr][0], h_fed[j][rr][1]);
          }
        }
      }
    if (kCluster > 1 && !kPublishEachRow)
#pragma unroll
      for (int j = 0; j < NG; ++j)
#pragma unroll
        for (int rr = 0; rr < RW; ++rr) publish_h(j, rr, h_fed[j][rr]);
    if constexpr (kSliced) slices.publish(t & 1, h_next + K::h_offset(0, d0), kThreads);
    if constexpr (!kTiled)
#pragma unroll
      for (int j = 0; j < NG; ++j)
#pragma unroll
        for (int rr = 0; rr < RW; ++rr) {
          if (b0 + row(owned(rr)) < batch) {
#pragma unroll
            for (int s = 0; s < Cell::kStates; ++s) {
              if (kSaves && (Cell::kStatesReadBack >> s & 1u))  // only what the backward reads
                *reinterpret_cast<float2*>(element_at(states_at[j][rr], p.states, t, s)) =
                    make_float2(state[j][rr][0][s], state[j][rr][1][s]);
              if (out_at[j][rr] != nullptr && s < p.out_states)
                *reinterpret_cast<uint32_t*>(element_at(out_at[j][rr], p.states_out, t, s)) =
                    mma::pack<S>(state[j][rr][0][s], state[j][rr][1][s]);
            }
            if (kSaves)
#pragma unroll
              for (int c = 0; c < Cell::kCache; ++c)
                *reinterpret_cast<float2*>(element_at(cache_at[j][rr], p.cache, t, c)) =
                    make_float2(cache[j][rr][0][c], cache[j][rr][1][c]);
            if (kSaves && more && h_gemm_at[j][rr] != nullptr)
              *reinterpret_cast<uint32_t*>(element_at(h_gemm_at[j][rr], p.h_gemm, t + 1, 0)) =
                  mma::pack<S>(h_fed[j][rr][0], h_fed[j][rr][1]);
          }
          if (kCluster == 1) publish_h(j, rr, h_fed[j][rr]);
        }
    // Step t-1's saves (its tile complete since this step's barrier; step t+1
    // writes it again after the next), off the path the other CTAs wait on.
    if (kTiled && t > 0) store_saves(t - 1);
  }
  async_copy::wait<0>();  // no copy may outlive the CTA's shared memory
  // Nor a store of another CTA: the last step's h, which no one reads.
  if constexpr (kSliced)
    slices.wait_all(int(steps - 1) & 1, uint32_t(steps - 1) >> 1);
  else
    exchange.wait(int(steps - 1) & 1, uint32_t(steps - 1) >> 1);
  if constexpr (kTiled) {
    __syncthreads();  // the last step's save tile is written
    store_saves(steps - 1);
  }
  // Every state after the last step, from the registers that carried them
  // (the output may hold h alone).
  if (p.last_states.ptr)
#pragma unroll
    for (int j = 0; j < NG; ++j)
#pragma unroll
      for (int rr = 0; rr < RW; ++rr) {
        const int64_t b = b0 + row(owned(rr));
        if (b < batch)
#pragma unroll
          for (int s = 0; s < Cell::kStates; ++s)
            *reinterpret_cast<uint32_t*>(&p.last_states.at(0, b, s, n, dim(j))) =
                mma::pack<S>(state[j][rr][0][s], state[j][rr][1][s]);
      }
}

}  // namespace flashrnn::fused

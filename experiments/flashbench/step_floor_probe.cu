// What bounds one step of the 1x768 tensor-core forward (docs/kernels.md v17).
//
// One 16-CTA cluster of 12 warps runs the step of tc_forward.cuh's inference
// loop at LSTM 1x768, B = 16, with its tiling (K split over the two warps of
// each group of 8 dims, 12 of a warp's 24 k-tiles of R in registers and 12 in
// shared memory, the two warps' sums added through shared memory, the cell in
// fp32 registers, h published into every CTA) and parts of it switched off or
// done another way, so that each variant's time per step says what a part costs:
//
//   full                  the kernel's step (v16): wait for all of h_{t-1}, MMA, cell, st.async h to every CTA
//   mma                   no exchange: each CTA feeds its own h back (the MMA and the cell alone)
//   mma_regs              mma, R's shared-memory k-tiles read from registers instead (no R traffic)
//   exchange              no MMA: the cell, the st.async publish and the wait alone
//   per_source            full, one mbarrier per source CTA: a warp multiplies each CTA's slice of h
//                         as soon as that slice is in, starting with its own CTA's
//   bulk                  full, h laid out by source CTA, each CTA's slice sent to each peer as one
//                         bulk copy (cp.async.bulk shared::cluster) after a CTA barrier
//   bulk_source           bulk with per_source's waits (v17's kernel: slice_exchange.cuh)
//   bulk_source_in_order  the same, every warp taking the sources in rank order
//   bulk_source_regs      bulk_source, R all from registers (what a faster MMA would give)
//   bulk_part_source      bulk_source, each K part's 8 rows sent after its own warps' barrier
//   bulk_rows_source      bulk_source in the kernel's [row][D + 8] layout: 16 copies of a row a peer
//   *_exchange            the publish and wait of bulk, bulk_part, bulk_rows alone (no MMA)
//
// Wx, the biases and the saves are left out (they are not on the step's
// critical path in the kernel). Times: the median of 5 runs of T = 1024 and of
// T = 2048, per step = their difference / 1024 (no launch cost). Standalone:
//   nvcc -O3 -std=c++17 -arch=sm_90a -I flashrnn_ops/src experiments/flashbench/step_floor_probe.cu -o probe
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
template <Publish kPublish, bool kMma, bool kSharedR, bool kPerSource, bool kRotate>
__global__ void __launch_bounds__(kThreads) step_kernel(int steps, float* out) {
  constexpr bool kBySource = kPublish == kBulkSlice || kPublish == kBulkPart;  // h tile [source][row][Dc + 8]
  constexpr int kTileElems = kBySource ? Q * kSliceElems : 16 * kHPitch;
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
      for (int i = 0; i < 2 * Q; ++i) mbarrier::init(barrier_at(i / Q, i % Q), kPublish == kBulkPart ? 2 : 1);
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
        if (kExchange && kPerSource && t > 0) mbarrier::wait_cluster(barrier_at(prev, source), parity);
#pragma unroll
        for (int kk = 0; kk < kTilesPerSource; ++kk) {
          const int at = i * kTilesPerSource + kk;  // which of R's k-tiles (a constant after unrolling)
          uint32_t a[4];
          mma::load_a_fragment(a, h_prev + h_index(0, source * Dc + 16 * kk), kBySource ? kSlicePitch : kHPitch);
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
      if constexpr (kPublish == kBulkPart) {
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

template <Publish kPublish, bool kMma, bool kSharedR, bool kPerSource, bool kRotate>
float time_ms(int steps, float* out) {
  auto kernel = step_kernel<kPublish, kMma, kSharedR, kPerSource, kRotate>;
  constexpr bool kBySource = kPublish == kBulkSlice || kPublish == kBulkPart;
  constexpr int kTileElems = kBySource ? Q * kSliceElems : 16 * kHPitch;
  const int smem = 2 * kTileElems * sizeof(S) + (KW - KR) * G * kThreads * 8 + DW * KS * G * 32 * 8;
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

struct Row {
  const char* name;
  float ms_1024, us_per_step;
};

template <Publish kPublish, bool kMma, bool kSharedR = true, bool kPerSource = false, bool kRotate = true>
Row measure(const char* name, float* out) {
  const float t1 = time_ms<kPublish, kMma, kSharedR, kPerSource, kRotate>(1024, out);
  const float t2 = time_ms<kPublish, kMma, kSharedR, kPerSource, kRotate>(2048, out);
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
  rows.push_back(measure<kBulkSlice, true, false, true>("bulk_source_regs", out));
  rows.push_back(measure<kBulkPart, true, true, true>("bulk_part_source", out));
  rows.push_back(measure<kBulkRows, true, true, true>("bulk_rows_source", out));
  rows.push_back(measure<kBulkSlice, false>("bulk_exchange", out));
  rows.push_back(measure<kBulkPart, false>("bulk_part_exchange", out));
  rows.push_back(measure<kBulkRows, false>("bulk_rows_exchange", out));
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

// Asynchronous loads of the next tile into shared memory (cp.async), so that a
// block keeps a whole tile of reads in flight while it scans the current one,
// without spending registers on them.
//
// Each thread copies its own vectors into its own slots ([vector][thread], 8 or
// 16 bytes each: consecutive threads, consecutive slots) and later reads only
// those, so only its own cp.async.wait is needed, never a block barrier.
// Vectors that cannot be copied whole (misaligned tensors, the end of a
// sequence, the edge of D) are read straight from global memory instead.
#pragma once

#include <cstdint>

#include "async_copy.cuh"
#include "scan/tile/scan_thread_map.h"
#include "scan/tile/scan_tile_io.cuh"
#include "scan/tile/scan_tiling.h"

namespace flashrnn::scan_kernels {

// A thread's vectors of one tensor: [B, D, T] S/V vectors along time; [B, T, D]
// one vector of CH channels per step.
template <class T, bool kBtd, int S, int CH>
struct ThreadVectors {
  static constexpr int kElements = kBtd ? CH : kTimeVector<T>;
  static constexpr int kCount = kBtd ? S : S / kElements;
  static constexpr int kBytes = kElements * int(sizeof(T));
  // Shared memory of one tensor in one stage.
  static constexpr int kStageBytes = kCount * kThreadsPerTile * kBytes;

  // Whether vector k is copied whole; otherwise its elements are read directly.
  __device__ static bool staged(const ThreadElements& e, int k) {
    if constexpr (kBtd)
      return e.vectors && e.channels == CH && e.first + k < e.steps;
    else
      return e.vectors && e.channels == 1 && e.first + S <= e.steps;
  }

  __device__ static const T* address(const T* p, const ThreadElements& e, int k) {
    if constexpr (kBtd) {
      return p + e.offset(e.first + k);
    } else {
      const int64_t start = e.descending ? e.steps - e.first - S : e.first;
      return p + e.base + start + k * kElements;
    }
  }

  __device__ static T* slot(unsigned char* stage, int k) {
    return reinterpret_cast<T*>(stage + (k * kThreadsPerTile + threadIdx.x) * kBytes);
  }
};

// Issues the copies of the thread's staged vectors of tensor p into `stage`.
template <bool kBtd, int S, int CH, class T>
__device__ __forceinline__ void stage_vectors(const T* p, const ThreadElements& e,
                                              unsigned char* stage) {
  using V = ThreadVectors<T, kBtd, S, CH>;
#pragma unroll
  for (int k = 0; k < V::kCount; ++k)
    if (V::staged(e, k)) async_copy::copy<V::kBytes>(V::slot(stage, k), V::address(p, e, k));
}

// The thread's S steps of tensor p in scan order: staged vectors from `stage`
// (after async_copy::wait), the rest from global memory (fill outside the tensor).
template <bool kBtd, int S, int CH, class T>
__device__ __forceinline__ void collect_steps(const T* p, const ThreadElements& e,
                                              unsigned char* stage, T fill, T (&out)[S][CH]) {
  using V = ThreadVectors<T, kBtd, S, CH>;
  constexpr int N = V::kElements;
  if constexpr (kBtd) {
#pragma unroll
    for (int s = 0; s < S; ++s) {
      if (V::staged(e, s)) {
        const Vector<T, N> v = *reinterpret_cast<const Vector<T, N>*>(V::slot(stage, s));
#pragma unroll
        for (int c = 0; c < CH; ++c) out[s][c] = v.v[c];
      } else {
        load_step<true, CH>(p, e, e.first + s, fill, out[s]);
      }
    }
  } else {
    if (!V::staged(e, 0)) {
      load_steps<false>(p, e, fill, out);
      return;
    }
#pragma unroll
    for (int k = 0; k < V::kCount; ++k) {
      const Vector<T, N> v = *reinterpret_cast<const Vector<T, N>*>(V::slot(stage, k));
      if (e.descending) {
#pragma unroll
        for (int j = 0; j < N; ++j) out[S - 1 - (k * N + j)][0] = v.v[j];
      } else {
#pragma unroll
        for (int j = 0; j < N; ++j) out[k * N + j][0] = v.v[j];
      }
    }
  }
}

}  // namespace flashrnn::scan_kernels

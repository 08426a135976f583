// Loads and stores of a thread's elements (scan_thread_map.h) in scan order.
//
// A thread keeps its S steps of CH channels in registers as values[s][c];
// every index into those arrays is a compile-time constant, so they stay in
// registers (both directions are unrolled separately for that).
#pragma once

#include <cstdint>
#include <cstring>

#include "scan/scan_math.cuh"
#include "scan/tile/scan_thread_map.h"
#include "scan/tile/scan_tiling.h"

namespace flashrnn::scan_kernels {

// N elements read or written by one instruction.
template <class T, int N>
struct alignas(N * sizeof(T)) Vector {
  T v[N];
};

template <int kBytes> struct RawVector;
template <> struct RawVector<16> { using type = uint4; };
template <> struct RawVector<8> { using type = uint2; };
template <> struct RawVector<4> { using type = unsigned; };

// Elements per 16-byte vector: what a [B, D, T] thread reads along time at once.
template <class T>
constexpr int kTimeVector = kVectorBytes / int(sizeof(T));

// Read-only data: the non-coherent path, N elements at once.
template <int N, class T>
__device__ __forceinline__ Vector<T, N> load_vector(const T* p) {
  using Raw = typename RawVector<N * sizeof(T)>::type;
  const Raw raw = __ldg(reinterpret_cast<const Raw*>(p));
  Vector<T, N> out;
  memcpy(&out, &raw, sizeof(raw));
  return out;
}

template <int N, class T>
__device__ __forceinline__ void store_vector(T* p, const Vector<T, N>& value) {
  using Raw = typename RawVector<N * sizeof(T)>::type;
  Raw raw;
  memcpy(&raw, &value, sizeof(raw));
  *reinterpret_cast<Raw*>(p) = raw;
}

// One step u of the thread's channels (fill outside the tensor).
template <bool kBtd, int CH, class T>
__device__ __forceinline__ void load_step(const T* p, const ThreadElements& e, int64_t u, T fill,
                                          T (&out)[CH]) {
  const bool inside = u >= 0 && u < e.steps;
  const T* row = p + (inside ? e.offset(u) : 0);
  if constexpr (kBtd) {
    if (inside && e.vectors && e.channels == CH) {
      const Vector<T, CH> v = load_vector<CH>(row);
#pragma unroll
      for (int c = 0; c < CH; ++c) out[c] = v.v[c];
      return;
    }
  }
#pragma unroll
  for (int c = 0; c < CH; ++c) out[c] = (inside && c < e.channels) ? row[c] : fill;
}

// [B, D, T]: the thread's S steps of its one channel are contiguous in memory,
// read as S/V vectors (reversed in registers when the scan runs downwards).
template <int S, class T>
__device__ __forceinline__ void load_contiguous_steps(const T* p, const ThreadElements& e, T fill,
                                                      T (&out)[S][1]) {
  constexpr int V = kTimeVector<T>;
  static_assert(S % V == 0, "[B, D, T] threads own whole vectors");
  if (e.channels == 1 && e.vectors && e.first + S <= e.steps) {
    if (e.descending) {
      const T* src = p + e.base + (e.steps - e.first - S);
#pragma unroll
      for (int k = 0; k < S / V; ++k) {
        const Vector<T, V> v = load_vector<V>(src + k * V);
#pragma unroll
        for (int j = 0; j < V; ++j) out[S - 1 - (k * V + j)][0] = v.v[j];
      }
    } else {
      const T* src = p + e.base + e.first;
#pragma unroll
      for (int k = 0; k < S / V; ++k) {
        const Vector<T, V> v = load_vector<V>(src + k * V);
#pragma unroll
        for (int j = 0; j < V; ++j) out[k * V + j][0] = v.v[j];
      }
    }
    return;
  }
#pragma unroll
  for (int s = 0; s < S; ++s) load_step<false, 1>(p, e, e.first + s, fill, out[s]);
}

// [B, D, T]: stores group k (scan steps kV .. kV+V−1) of the thread's steps.
template <int S, class T>
__device__ __forceinline__ void store_contiguous_group(T* p, const ThreadElements& e, int k,
                                                       const T (&in)[S][1]) {
  constexpr int V = kTimeVector<T>;
  if (e.channels == 0) return;
  if (e.vectors && e.first + S <= e.steps) {
    Vector<T, V> v;
    if (e.descending) {
#pragma unroll
      for (int j = 0; j < V; ++j) v.v[j] = in[k * V + V - 1 - j][0];
      store_vector(p + e.base + (e.steps - e.first - k * V - V), v);
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) v.v[j] = in[k * V + j][0];
      store_vector(p + e.base + e.first + k * V, v);
    }
    return;
  }
#pragma unroll
  for (int j = 0; j < V; ++j)
    if (e.first + k * V + j < e.steps) p[e.offset(e.first + k * V + j)] = in[k * V + j][0];
}

// [B, T, D]: stores step s of the thread's channels.
template <int CH, class T>
__device__ __forceinline__ void store_row_step(T* p, const ThreadElements& e, int s,
                                               const T (&in)[CH]) {
  const int64_t u = e.first + s;
  if (e.channels == 0 || u >= e.steps) return;
  T* row = p + e.offset(u);
  if (e.vectors && e.channels == CH) {
    Vector<T, CH> v;
#pragma unroll
    for (int c = 0; c < CH; ++c) v.v[c] = in[c];
    store_vector(row, v);
    return;
  }
#pragma unroll
  for (int c = 0; c < CH; ++c)
    if (c < e.channels) row[c] = in[c];
}

// Called once step s of `out` is final (s ascending, a compile-time constant
// after unrolling): stores what became complete, so registers free up early.
template <bool kBtd, int S, int CH, class T>
__device__ __forceinline__ void store_completed(T* p, const ThreadElements& e, int s,
                                                const T (&out)[S][CH]) {
  if constexpr (kBtd) {
    store_row_step(p, e, s, out[s]);
  } else {
    constexpr int V = kTimeVector<T>;
    if ((s + 1) % V == 0) store_contiguous_group(p, e, s / V, out);
  }
}

// The thread's S steps in scan order (fill outside the tensor).
template <bool kBtd, int S, int CH, class T>
__device__ __forceinline__ void load_steps(const T* p, const ThreadElements& e, T fill,
                                           T (&out)[S][CH]) {
  if constexpr (kBtd) {
#pragma unroll
    for (int s = 0; s < S; ++s) load_step<true, CH>(p, e, e.first + s, fill, out[s]);
  } else {
    load_contiguous_steps(p, e, fill, out);
  }
}

}  // namespace flashrnn::scan_kernels

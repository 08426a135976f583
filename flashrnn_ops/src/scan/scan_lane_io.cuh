// A lane's V consecutive scan steps of one [B, D, T] row: one 16-byte access
// when the row allows it (T a multiple of V, aligned tensors), else V scalar
// accesses. Lanes of a warp take consecutive groups of V steps, so a warp-wide
// access covers 32·V contiguous elements (scan_bdt_plan.h).
#pragma once

#include <cstdint>

#include "scan_math.cuh"
#include "scan_tile_io.cuh"  // Vector, load_vector, store_vector

namespace flashrnn::scan_kernels {

// Elements of one 16-byte access.
template <class T>
constexpr int kLaneVector = 16 / int(sizeof(T));

// One row in scan order: scan step u is physical step t = u, or T−1−u.
struct RowView {
  int64_t base;     // element offset of t = 0
  int64_t steps;    // T
  bool descending;  // scan order runs from t = T−1 down to 0
  bool vectors;     // 16-byte accesses allowed (T % V == 0, aligned tensors)

  __device__ __forceinline__ int64_t offset(int64_t u) const {
    return base + (descending ? steps - 1 - u : u);
  }
};

// Scan steps u .. u+V−1 of tensor p (u a multiple of V), in scan order; `fill`
// past the end of the row.
template <class T, int V>
__device__ __forceinline__ Vector<T, V> load_lane(const T* p, const RowView& r, int64_t u, T fill) {
  Vector<T, V> out;
  if (r.vectors) {
    if (u < r.steps) {  // T % V == 0: the whole vector is inside
      const Vector<T, V> v = load_vector<V>(p + r.base + (r.descending ? r.steps - u - V : u));
#pragma unroll
      for (int j = 0; j < V; ++j) out.v[j] = r.descending ? v.v[V - 1 - j] : v.v[j];
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) out.v[j] = fill;
    }
    return out;
  }
#pragma unroll
  for (int j = 0; j < V; ++j) out.v[j] = u + j < r.steps ? p[r.offset(u + j)] : fill;
  return out;
}

// One scan step (fill outside the row).
template <class T>
__device__ __forceinline__ T load_row_step(const T* p, const RowView& r, int64_t u, T fill) {
  return (u >= 0 && u < r.steps) ? p[r.offset(u)] : fill;
}

// Stores scan steps u .. u+V−1 (those inside the row).
template <class T, int V>
__device__ __forceinline__ void store_lane(T* p, const RowView& r, int64_t u,
                                           const Vector<T, V>& x) {
  if (r.vectors) {
    if (u < r.steps) {
      Vector<T, V> v;
#pragma unroll
      for (int j = 0; j < V; ++j) v.v[j] = r.descending ? x.v[V - 1 - j] : x.v[j];
      store_vector(p + r.base + (r.descending ? r.steps - u - V : u), v);
    }
    return;
  }
#pragma unroll
  for (int j = 0; j < V; ++j)
    if (u + j < r.steps) p[r.offset(u + j)] = x.v[j];
}

}  // namespace flashrnn::scan_kernels

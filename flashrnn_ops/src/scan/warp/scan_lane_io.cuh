// A lane's V consecutive scan steps of one [B, D, T] row: one 16-byte access
// when the row allows it (T a multiple of V, aligned tensors), else V scalar
// accesses. Lanes of a warp take consecutive groups of V steps, so a warp-wide
// access covers 32·V contiguous elements (scan_bdt_plan.h).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "scan/scan_math.cuh"

namespace flashrnn::scan_kernels {

// Elements of one 16-byte access.
template <class T>
constexpr int kLaneVector = 16 / int(sizeof(T));

// One row in scan order: scan step u is physical step t = u, or T−1−u when the
// scan runs downwards (kDescending, a template parameter of the kernels).
struct RowView {
  int64_t base;   // element offset of t = 0
  int64_t steps;  // T
  bool vectors;   // 16-byte accesses allowed (T % V == 0, aligned tensors)
};

template <bool kDescending>
__device__ __forceinline__ int64_t row_offset(const RowView& r, int64_t u) {
  return r.base + (kDescending ? r.steps - 1 - u : u);
}

// A lane's V steps stay packed as loaded: four 32-bit words in memory order
// (one fp32 or two bf16/fp16 elements each), so a 16-bit dtype costs no more
// registers than fp32. Scan step j of the lane is element lane_index(j), a
// compile-time index after unrolling, so descending rows cost nothing extra.
struct alignas(16) LaneWords {
  uint32_t w[4];
};

template <bool kDescending, int V>
__device__ __forceinline__ constexpr int lane_index(int j) {
  return kDescending ? V - 1 - j : j;
}

// Element i (memory order) of packed words as float.
template <class T>
__device__ __forceinline__ float word_element(const LaneWords& v, int i) {
  if constexpr (sizeof(T) == 4) {
    return __uint_as_float(v.w[i]);
  } else {
    const uint32_t word = v.w[i / 2];
    const unsigned short bits = (i % 2 == 0) ? (word & 0xffffu) : (word >> 16);
    if constexpr (std::is_same_v<T, __nv_bfloat16>)
      return __uint_as_float(uint32_t(bits) << 16);
    else
      return __half2float(__ushort_as_half(bits));
  }
}

template <class T>
__device__ __forceinline__ uint32_t element_bits(T value) {
  if constexpr (sizeof(T) == 4) {
    return __float_as_uint(value);
  } else {
    unsigned short bits;
    memcpy(&bits, &value, 2);
    return bits;
  }
}

// Scan step j of a lane's words.
template <bool kDescending, class T>
__device__ __forceinline__ float lane_step(const LaneWords& v, int j) {
  return word_element<T>(v, lane_index<kDescending, kLaneVector<T>>(j));
}

// Packs V scan-order values into memory-order words of T.
template <bool kDescending, class T>
__device__ __forceinline__ LaneWords pack_lane(const float (&scan_order)[kLaneVector<T>]) {
  constexpr int V = kLaneVector<T>;
  LaneWords out;
  if constexpr (sizeof(T) == 4) {
#pragma unroll
    for (int i = 0; i < 4; ++i) out.w[i] = __float_as_uint(scan_order[lane_index<kDescending, V>(i)]);
  } else {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const uint32_t lo = element_bits(from_float<T>(scan_order[lane_index<kDescending, V>(2 * k)]));
      const uint32_t hi =
          element_bits(from_float<T>(scan_order[lane_index<kDescending, V>(2 * k + 1)]));
      out.w[k] = lo | (hi << 16);
    }
  }
  return out;
}

// One 16-byte load of read-only data and one 16-byte store, as single
// instructions (left to itself the compiler may split a store into four).
__device__ __forceinline__ LaneWords load_words(const void* p) {
  LaneWords v;
  asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.w[0]), "=r"(v.w[1]), "=r"(v.w[2]), "=r"(v.w[3])
      : "l"(p));
  return v;
}

__device__ __forceinline__ void store_words(void* p, const LaneWords& v) {
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.w[0]), "r"(v.w[1]),
               "r"(v.w[2]), "r"(v.w[3]));
}

// V copies of one value.
template <class T>
__device__ __forceinline__ LaneWords splat(T value) {
  const uint32_t bits = element_bits(value);
  const uint32_t word = sizeof(T) == 4 ? bits : (bits | (bits << 16));
  return LaneWords{{word, word, word, word}};
}

// Scan steps u .. u+V−1 of tensor p (u a multiple of V); `fill` past the row's end.
template <bool kDescending, class T>
__device__ __forceinline__ LaneWords load_lane(const T* p, const RowView& r, int64_t u, T fill) {
  constexpr int V = kLaneVector<T>;
  if (r.vectors) {
    if (u < r.steps)  // T % V == 0: the whole vector is inside
      return load_words(p + r.base + (kDescending ? r.steps - u - V : u));
    return splat(fill);
  }
  uint32_t bits[V];
#pragma unroll
  for (int j = 0; j < V; ++j)
    bits[lane_index<kDescending, V>(j)] =
        element_bits(u + j < r.steps ? p[row_offset<kDescending>(r, u + j)] : fill);
  LaneWords out;
#pragma unroll
  for (int k = 0; k < 4; ++k)
    out.w[k] = sizeof(T) == 4 ? bits[k] : (bits[(2 * k) % V] | (bits[(2 * k + 1) % V] << 16));
  return out;
}

// One scan step (fill outside the row).
template <bool kDescending, class T>
__device__ __forceinline__ T load_row_step(const T* p, const RowView& r, int64_t u, T fill) {
  return (u >= 0 && u < r.steps) ? p[row_offset<kDescending>(r, u)] : fill;
}

// Stores scan steps u .. u+V−1 (those inside the row) from memory-order words.
template <bool kDescending, class T>
__device__ __forceinline__ void store_lane(T* p, const RowView& r, int64_t u, const LaneWords& x) {
  constexpr int V = kLaneVector<T>;
  if (r.vectors) {
    if (u < r.steps) store_words(p + r.base + (kDescending ? r.steps - u - V : u), x);
    return;
  }
#pragma unroll
  for (int j = 0; j < V; ++j) {
    if (u + j < r.steps) {
      const int i = lane_index<kDescending, V>(j);
      const uint32_t word = x.w[sizeof(T) == 4 ? i : i / 2];
      const uint32_t bits = sizeof(T) == 4 ? word : ((i % 2 == 0) ? (word & 0xffffu) : (word >> 16));
      T value;
      if constexpr (sizeof(T) == 4) {
        value = __uint_as_float(bits);
      } else {
        const unsigned short half_bits = static_cast<unsigned short>(bits);
        memcpy(&value, &half_bits, 2);
      }
      p[row_offset<kDescending>(r, u + j)] = value;
    }
  }
}

// Which of the lane's steps u .. u+V−1 is the row's final one: 0..V−1, or
// outside that range (−1 or V) when none.
__device__ __forceinline__ int final_step_in_lane(const RowView& r, int64_t u, int V) {
  const int64_t j = r.steps - 1 - u;
  return j < 0 ? -1 : (j >= V ? V : int(j));
}

}  // namespace flashrnn::scan_kernels

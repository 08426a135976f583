// One (batch row, head, dim) of a Slots tensor, fixed when a persistent kernel
// starts: a step and a slot are then two adds, where Slots::at spends a dozen
// 64-bit multiply-adds on every access.
#pragma once

#include "pointwise.h"

namespace flashrnn::fused {

template <class V>
struct ElementPointer {
  V* origin = nullptr;  // step 0, slot 0; null when the tensor is absent
  int64_t time_stride = 0, slot_stride = 0;

  __device__ __forceinline__ V* at(int64_t t, int slot) const {
    return origin + t * time_stride + slot * slot_stride;
  }
  __device__ __forceinline__ explicit operator bool() const { return origin != nullptr; }
};

template <class V>
__device__ __forceinline__ ElementPointer<V> element_pointer(const Slots<V>& s, int64_t b,
                                                             int64_t n, int64_t d) {
  return {s.ptr ? &s.at(0, b, 0, n, d) : nullptr, s.time_stride, s.slot_stride};
}

}  // namespace flashrnn::fused

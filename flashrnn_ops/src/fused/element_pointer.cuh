// Where one (batch row, head, dim) of a Slots tensor lives, fixed when a
// persistent kernel starts. The per-step offset t·time_stride + slot·slot_stride
// is the same for every thread, so taking the strides from the kernel's
// parameters (not a per-thread copy) lets the compiler compute it once per warp
// in uniform registers: an access is then one 64-bit add, where Slots::at spends
// a dozen multiply-adds on per-thread values every step.
#pragma once

#include "pointwise.h"

namespace flashrnn::fused {

template <class V>
__device__ __forceinline__ V* element_origin(const Slots<V>& s, int64_t b, int64_t n, int64_t d) {
  return s.ptr ? &s.at(0, b, s.first_slot, n, d) : nullptr;
}

// Entry (t, slot) of the element whose origin is `origin` in tensor `s`.
template <class V>
__device__ __forceinline__ V* element_at(V* origin, const Slots<V>& s, int64_t t, int slot) {
  return origin + (t * s.time_stride + (slot - s.first_slot) * s.slot_stride);
}

}  // namespace flashrnn::fused

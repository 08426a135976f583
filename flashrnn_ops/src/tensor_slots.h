// Slots<> views of torch tensors (the bridge from tensors to the plain params
// structs of pointwise.h).
#pragma once

#include <ATen/Tensor.h>
#include <c10/util/Exception.h>

#include "pointwise.h"

namespace flashrnn {

constexpr int kBroadcast = -1;  // a Slots axis the tensor does not have: stride 0

// Views `t` as Slots by naming which of its dims is time, batch, slot and head;
// its last dim must be the head dimension D, contiguous.
template <class V>
Slots<V> slots(const at::Tensor& t, int time_dim, int batch_dim, int slot_dim, int head_dim) {
  TORCH_INTERNAL_ASSERT(t.defined() && (t.size(-1) == 1 || t.stride(-1) == 1),
                        "slots: the last dimension must be contiguous");
  const auto stride = [&](int dim) { return dim == kBroadcast ? int64_t(0) : t.stride(dim); };
  return {static_cast<V*>(t.data_ptr()), stride(time_dim), stride(batch_dim), stride(slot_dim),
          stride(head_dim)};
}

inline ResetMask reset_mask_of(const at::Tensor& reset) {  // [B, T] bool or undefined
  if (!reset.defined()) return {};
  return {reset.const_data_ptr<bool>(), reset.stride(0), reset.stride(1)};
}

}  // namespace flashrnn

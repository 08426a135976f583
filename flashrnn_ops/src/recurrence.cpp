#include "recurrence.h"

#include <ATen/ATen.h>

#include "cells/registry.h"

namespace flashrnn {

int cache_slots(Cell cell) {
  return cells::dispatch_cell(cell, [](auto c) { return decltype(c)::kCache; });
}

at::ScalarType compute_type(at::ScalarType input) {
  return input == at::kDouble ? at::kDouble : at::kFloat;
}

at::Tensor heads_major(const at::Tensor& r, at::ScalarType type) {
  const int64_t gates = r.size(0), heads = r.size(1), dim = r.size(2);
  return r.permute({1, 0, 2, 3}).reshape({heads, gates * dim, dim}).to(type).contiguous();
}

at::Tensor gates_major(const at::Tensor& r_heads, int64_t gates) {
  const int64_t heads = r_heads.size(0), dim = r_heads.size(2);
  return r_heads.view({heads, gates, dim, dim}).permute({1, 0, 2, 3}).contiguous();
}

at::Tensor initial_states_internal(const Inputs& in, int num_states, at::ScalarType type) {
  const at::Tensor& wx = in.wx;
  if (!in.initial_states.defined())
    return at::zeros({wx.size(0), num_states, wx.size(3), wx.size(4)}, wx.options().dtype(type));
  return in.initial_states.squeeze(2).permute({1, 0, 2, 3}).to(type).contiguous();
}

}  // namespace flashrnn

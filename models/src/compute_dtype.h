// Private: the dtype a block computes in — autocast's where autocast is on
// for the tensor's device, else the tensor's own. Casting a block's input once
// to it (instead of autocast casting it for every matmul that reads it) saves
// a copy per reader and the memory autograd keeps for each.
#pragma once

#include <ATen/autocast_mode.h>
#include <torch/types.h>

namespace flashtrain::models {

inline torch::ScalarType compute_dtype(const torch::Tensor& x) {
  const c10::DeviceType device = x.device().type();
  return at::autocast::is_autocast_enabled(device) ? at::autocast::get_autocast_dtype(device) : x.scalar_type();
}

}  // namespace flashtrain::models

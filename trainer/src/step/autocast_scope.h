// Private: bf16 autocast for a scope (training.mixed_precision = "bf16"),
// restoring the previous state after. Parameters stay float32 (the master
// weights); matmuls run in bf16.
#pragma once

#include <ATen/autocast_mode.h>

namespace flashtrain::trainer {

class AutocastScope {
 public:
  AutocastScope(c10::DeviceType device, bool bf16)
      : device_(device), enabled_(bf16),
        was_enabled_(at::autocast::is_autocast_enabled(device)),
        previous_dtype_(at::autocast::get_autocast_dtype(device)) {
    if (!enabled_) return;
    at::autocast::set_autocast_dtype(device_, at::kBFloat16);
    at::autocast::set_autocast_enabled(device_, true);
  }
  ~AutocastScope() {
    if (!enabled_) return;
    at::autocast::set_autocast_enabled(device_, was_enabled_);
    at::autocast::set_autocast_dtype(device_, previous_dtype_);
    at::autocast::clear_cache();  // casts of the weights are stale after the update
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  c10::DeviceType device_;
  bool enabled_;
  bool was_enabled_;
  at::ScalarType previous_dtype_;
};

}  // namespace flashtrain::trainer

// Reads DeviceProps from a live GPU through the CUDA runtime. Lives in its own
// library (flashrnn_tune_cuda) so the solver and the hardware model link
// without the CUDA runtime.
#pragma once

#include <stdexcept>

#include "flashrnn/tune/device_props.h"

namespace flashrnn::tune {

// No usable device: none present, no driver, or the ordinal is out of range.
// The message names the CUDA error.
class DeviceQueryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

DeviceProps query_cuda_device(int ordinal = 0);

}  // namespace flashrnn::tune

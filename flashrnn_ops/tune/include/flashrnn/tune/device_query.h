// Reads DeviceProps from a live GPU through the CUDA runtime. Lives in its own
// library (flashrnn_tune_cuda) so the solver and the hardware model link
// without the CUDA runtime.
#pragma once

#include <stdexcept>
#include <string_view>

#include "flashrnn/tune/device_props.h"

namespace flashrnn::tune {

// No usable device: none present, no driver, or the ordinal is out of range.
// The message names the CUDA error.
class DeviceQueryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

DeviceProps query_cuda_device(int ordinal = 0);

// A device by name: a fixture (a100, h100, h200, l4: device_fixture) or
// "cuda" / "cuda:N" (the live device N, default 0). Throws ProblemError for an
// unknown name or a malformed ordinal, DeviceQueryError when the live device
// cannot be read.
DeviceProps device_by_name(std::string_view name);

}  // namespace flashrnn::tune

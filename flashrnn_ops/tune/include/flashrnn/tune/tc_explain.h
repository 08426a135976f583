// Why the tensor-core fused kernels run a case or not: their tiling and its
// resources against the device's limits, or every limit the case breaks.
#pragma once

#include <string>

#include "flashrnn/tune/device_props.h"
#include "flashrnn/tune/fused_shape.h"

namespace flashrnn::tune {

// Several lines, for flashtune and `flashtrain tune`.
std::string explain_tc_choice(const DeviceProps& device, const FusedShape& shape);

}  // namespace flashrnn::tune

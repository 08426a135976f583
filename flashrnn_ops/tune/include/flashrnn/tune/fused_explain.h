// Why the tuner chose what it chose: the configuration's resource use against
// the device's limits, and for each layout decision the best configuration with
// that decision changed, or the constraint that rules the change out.
#pragma once

#include <string>
#include <string_view>

#include "flashrnn/tune/device_props.h"
#include "flashrnn/tune/fused_select.h"
#include "flashrnn/tune/fused_shape.h"

namespace flashrnn::tune {

// `ranking` is rank_fused_configs(device, shape, model_text). Solves the model a
// few more times (one per ruled-out alternative): meant for tools, not the op.
std::string explain_fused_choice(const DeviceProps& device, const FusedShape& shape,
                                 const FusedRanking& ranking, std::string_view model_text = {});

}  // namespace flashrnn::tune

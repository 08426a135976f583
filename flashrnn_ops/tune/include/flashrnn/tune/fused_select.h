// Choosing the fused kernel's launch configuration: every solution of the
// tiling model, ranked by the cost model.
//
//   FusedSelection s = select_fused_config(device_fixture("h100"), Cell::kLstm, 12, 64, 16,
//                                          DType::kBf16);
//   if (!s.config) use_alternating_backend(s.reason);
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "flashrnn/tune/device_props.h"
#include "flashrnn/tune/fused_config.h"
#include "flashrnn/tune/fused_cost.h"
#include "flashrnn/tune/fused_shape.h"

namespace flashrnn::tune {

struct RankedConfig {
  FusedConfig config;
  FusedCost cost;
};

struct FusedRanking {
  std::vector<RankedConfig> configs;  // cheapest first; ties keep the model's search order
  std::string reason;                 // when empty: why nothing fits
  double solve_seconds = 0;
};

// Throws ProblemError for a malformed shape or device, or model text the tuner
// cannot use (model_text empty: the built-in model).
FusedRanking rank_fused_configs(const DeviceProps& device, const FusedShape& shape,
                                std::string_view model_text = {});

struct FusedSelection {
  std::optional<FusedConfig> config;  // empty: use the alternating backend
  FusedCost cost;                     // of config
  std::string reason;                 // when empty: why no fused configuration fits
  size_t feasible = 0;                // how many configurations were ranked
};

FusedSelection select_fused_config(const DeviceProps& device, Cell cell, int heads, int head_dim,
                                   int batch, DType dtype);
FusedSelection select_fused_config(const DeviceProps& device, const FusedShape& shape);

// The configuration these decisions give for this shape and device, if it fits
// (a cached choice is checked this way before it is used).
std::optional<FusedConfig> fused_config_with(const DeviceProps& device, const FusedShape& shape,
                                             const FusedDecisions& decisions);

}  // namespace flashrnn::tune

// Whether the tensor-core fused kernels run a case on a device, with their
// tiling and resources, or the limit that rules them out. The fused backend
// decides with this (fused_backend.cpp).
//
//   TcSelection s = select_tc_config(device_fixture("h200"), Cell::kLstm, 64, 16, DType::kBf16);
//   if (!s.config) run_alternating(s.reason);  // "R of one head needs ..."
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "flashrnn/tune/device_props.h"
#include "flashrnn/tune/fused_shape.h"
#include "flashrnn/tune/tc_config.h"

namespace flashrnn::tune {

struct TcSelection {
  std::optional<TcConfig> config;  // empty: the tensor-core kernels do not run this case
  std::string binding;             // the constraint that rules it out (a label of tc_tiling.txt)
  std::string reason;              // why, in words with the numbers; empty when config is set
  std::optional<TcConfig> needs;   // what the case would take with no device limit, if computable
  std::vector<std::string> broken; // every limit the case breaks, in words, the binding one first
};

// Throws ProblemError for a malformed shape or device.
TcSelection select_tc_config(const DeviceProps& device, const FusedShape& shape);
// One head (ctas = ceil(batch / 16)).
TcSelection select_tc_config(const DeviceProps& device, Cell cell, int head_dim, int batch,
                             DType dtype);

}  // namespace flashrnn::tune

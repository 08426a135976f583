// Checks the scan op's inputs; throws InputError naming the tensor, its shape
// and the expected one.
#pragma once

#include <ATen/Tensor.h>

#include "flashrnn/scan.h"

namespace flashrnn {

void validate_scan_inputs(const at::Tensor& a, const at::Tensor& b, const ScanOptions& options);

}  // namespace flashrnn

// Checks the op's inputs against the contract; throws InputError naming the
// tensor, its shape and the expected one.
#pragma once

#include <optional>
#include <string>

#include <ATen/Tensor.h>

#include "flashrnn/flashrnn.h"
#include "shape_text.h"

namespace flashrnn {

void validate_inputs(const at::Tensor& Wx, const at::Tensor& R, const at::Tensor& b,
                     const std::optional<at::Tensor>& initial_states, const Options& options);

}  // namespace flashrnn

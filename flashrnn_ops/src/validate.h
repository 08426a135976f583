// Checks the op's inputs against the contract; throws InputError naming the
// tensor, its shape and the expected one.
#pragma once

#include <optional>
#include <string>

#include <ATen/Tensor.h>

#include "flashrnn/flashrnn.h"

namespace flashrnn {

// "[2, 3, 4]": a shape as the library's error messages write it.
std::string shape_of(at::IntArrayRef sizes);
// A tensor's shape, or "an undefined tensor".
std::string shape_of(const at::Tensor& t);

void validate_inputs(const at::Tensor& Wx, const at::Tensor& R, const at::Tensor& b,
                     const std::optional<at::Tensor>& initial_states, const Options& options);

}  // namespace flashrnn

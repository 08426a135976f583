// Shapes as the library's error messages write them (the recurrent op's and the
// scan's input checks).
#pragma once

#include <string>

#include <ATen/Tensor.h>

namespace flashrnn {

// "[2, 3, 4]".
std::string shape_of(at::IntArrayRef sizes);
// A tensor's shape, or "an undefined tensor".
std::string shape_of(const at::Tensor& t);

}  // namespace flashrnn

// The vanilla backend: a time loop of torch matmuls (bmm) plus the cells'
// pointwise steps, on the CPU or a GPU, everything in the compute type (float,
// or double for double inputs). The reference the other backends are tested
// against, and the fallback for any shape.
#pragma once

#include "recurrence.h"

namespace flashrnn::vanilla {

ForwardResult forward(const Problem& problem, const Inputs& in);

Gradients backward(const Problem& problem, const Saved& saved, const OutputGradients& grads);

}  // namespace flashrnn::vanilla

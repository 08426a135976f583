// The fused backend: one persistent kernel runs all T steps forward (and one
// backward), R resident in shared memory, h kept on chip between steps
// (fused_kernels.cuh). δR is one GEMM over all T·B rows after the backward.
#pragma once

#include <string>

#include "recurrence.h"

namespace flashrnn::fused {

// Empty when the backend runs the case, else why not.
std::string unsupported_reason(Cell cell, const Inputs& in);

ForwardResult forward(const Problem& problem, const Inputs& in);

Gradients backward(const Problem& problem, const Saved& saved, const OutputGradients& grads);

}  // namespace flashrnn::fused

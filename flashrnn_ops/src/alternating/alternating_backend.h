// The alternating backend: per time step one cuBLAS GEMM for the recurrent term
// of all heads and one fused pointwise kernel; the whole time loop is captured
// into a CUDA graph once per shape and replayed (launch overhead dominates a
// loop of thousands of tiny kernels otherwise). Any head dimension, batch and
// length; bf16, fp16 and fp32 with fp32 accumulation and fp32 states.
#pragma once

#include <string>

#include "recurrence.h"

namespace flashrnn::alternating {

// Empty when the backend runs the case, else why not.
std::string unsupported_reason(const Inputs& in);

ForwardResult forward(const Problem& problem, const Inputs& in);

Gradients backward(const Problem& problem, const Saved& saved, const OutputGradients& grads);

}  // namespace flashrnn::alternating

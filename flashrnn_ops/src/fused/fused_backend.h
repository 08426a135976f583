// The fused backend: one persistent kernel runs all T steps forward (and one
// backward), R resident on chip, h kept on chip between steps. bf16/fp16 with
// the head dims of tc_tiling.h run the tensor-core kernels (R in registers,
// tc_forward.cuh / tc_backward.cuh; an LSTM or sLSTM head too large for them,
// over 256 dims, runs the tensor-core forward with R partly in shared memory
// and the alternating backend's backward); everything else the first, FMA
// kernels (R in shared memory, fused_kernels.cuh). δR is one GEMM over all
// T·B rows after the backward.
#pragma once

#include <string>

#include "recurrence.h"

namespace flashrnn::fused {

// Empty when the backend runs the case, else why not.
std::string unsupported_reason(Cell cell, const Inputs& in);

// Whether the case runs on the tensor-core kernels: the tuner's selection for
// the device (fused/tc_selection.h).
bool uses_tensor_cores(Cell cell, const Inputs& in);

// The largest head dim at which `auto` picks the FMA kernels, for float32: the
// only case they beat the alternating backend (one H200, B=16, T=1024, 48x16
// heads: 1.4-1.5x its forward, 1.8-1.9x forward+backward). From 32 dims on the
// alternating backend is faster, up to 4x; the one exception, Elman's
// forward+backward at 32 dims (FMA 1.09x), is too small to pick them for
// (experiments/results/fma_vs_alternating_NVIDIA_H200.txt).
constexpr int64_t kFmaAutoMaxHeadDim = 16;

// Whether `auto` picks this backend: wherever the tensor-core kernels run, and
// the FMA kernels on float32 heads of at most kFmaAutoMaxHeadDim dims.
bool auto_picks(Cell cell, const Inputs& in);

// Why the tensor-core kernels do not run the case (the tuner's binding
// constraint, in words); empty when they do.
std::string tensor_core_reason(Cell cell, const Inputs& in);

// Whether this backend's backward runs a case its forward runs. False for an
// LSTM or sLSTM head whose tensor-core forward has no tensor-core backward on
// the device (the tuner's model: its shared memory does not fit): the
// alternating backend's backward then runs on the same saved tensors (the
// state slots the forward leaves unwritten are ones the cell's backward does
// not read: Cell::kStatesReadBack). The op decides this (flashrnn.cpp).
bool runs_backward(Cell cell, const Inputs& in);

ForwardResult forward(const Problem& problem, const Inputs& in);

// Only for cases runs_backward() takes.
Gradients backward(const Problem& problem, const Saved& saved, const OutputGradients& grads);

}  // namespace flashrnn::fused

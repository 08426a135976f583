// The recurrent op's backend choice and the calls into the chosen backend,
// shared by flashrnn() and the Python extension's forward and backward ops
// (python/csrc), which must agree on them.
#pragma once

#include "flashrnn/flashrnn.h"
#include "recurrence.h"

namespace flashrnn {

// The backend that runs a case: `requested`, or for kAuto the fastest that
// supports it. Reads only Wx's sizes, dtype and device (never its data).
// Throws InputError when an explicitly requested backend cannot run the case.
Backend resolve_backend(Backend requested, Cell cell, const Inputs& in);

// The backend whose backward follows a `forward` backend's forward: its own,
// except a fused forward whose backward the fused backend does not run (wide
// LSTM/sLSTM heads: fused::runs_backward), which the alternating one takes.
// Reads only Wx's sizes, dtype and device.
Backend backward_backend(Backend forward, Cell cell, const Inputs& in);

// The forward and the backward of a chosen backend.
ForwardResult forward_on(Backend backend, const Problem& problem, const Inputs& in);
Gradients backward_on(Backend backend, const Problem& problem, const Saved& saved, const OutputGradients& grads);

}  // namespace flashrnn

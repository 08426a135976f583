// The backend choice of the recurrent op, shared by flashrnn() and the Python
// extension's forward and backward ops (python/csrc), which must agree on it.
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

}  // namespace flashrnn

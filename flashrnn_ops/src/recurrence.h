// What every backend of the recurrent op shares: the problem description, the
// tensors a forward leaves for its backward, and the helpers that prepare them.
//
// Internal layouts (T compute type, S storage type = the user's dtype, or the
// compute type for the vanilla backend):
//   r_heads [N, Gx·D, D] S    R per head; row (g, i) of head n is R[g, n, i, :]
//   s0      [B, S, N, D] T    initial states
//   states  [T, B, R, N, D] T after each step, the R states the backward reads
//                             (SavedStates: slots first … first+R-1 of S)
//   cache   [T, B, C, N, D] T what each cell's backward needs
//   h_gemm  [T, B, N, D] S    the h each step multiplies with R (s0's h after a reset)
//   rh      [N, B, Gx, D] T   R·h of one step
//   d_rh    [N, T, B, Gx, D] S  gradient of R·h for every step
#pragma once

#include <ATen/Tensor.h>

#include "flashrnn/flashrnn.h"

namespace flashrnn {

struct Problem {
  Cell cell = Cell::kLstm;
  bool gradient_recurrent_cut = false;
  double gradient_recurrent_clip = 0.0;
  double forward_clip = 0.0;
  bool keep_for_backward = true;  // false: no autograd graph records the call (inference)
  bool output_h_only = false;     // states_all holds h alone (Options::output_h_only)
};

// States states_all holds for every step: 1 (h alone) or all of the cell's.
int output_states(const Problem& problem);

struct Inputs {
  at::Tensor wx;              // [B, T, Gx, N, D], any strides with D contiguous
  at::Tensor r;               // [Gx, N, D, D]
  at::Tensor b;               // [Gb, N, D]
  at::Tensor initial_states;  // [S, B, 1, N, D] or undefined (zeros)
  at::Tensor reset;           // [B, T] bool or undefined
};

// What a forward keeps for its backward.
struct Saved {
  at::Tensor r_heads, s0, reset, states, cache, h_gemm;
  at::ScalarType wx_type, r_type, b_type;  // the gradients are returned in these
  int64_t biases = 0;                      // Gb
};

struct ForwardResult {
  at::Tensor states_all;   // [S', B, T, N, D] in the input dtype, S' = output_states()
  at::Tensor last_states;  // [S, B, 1, N, D] in the input dtype
  Saved saved;
};

struct Gradients {
  at::Tensor d_wx, d_r, d_b;  // in the dtypes of Wx, R, b
  at::Tensor d_s0;            // [B, S, N, D] in the compute type
};

// External gradients of the outputs (either may be undefined).
struct OutputGradients {
  at::Tensor d_states_all;  // [S', B, T, N, D]
  at::Tensor d_last;        // [S, B, 1, N, D]
};

int cache_slots(Cell cell);

// The run of state slots a forward keeps per step for the backward (the
// slots of Cell::kStatesReadBack, cells/saved_states.h).
struct SavedStates {
  int first = 0, count = 0;
};
SavedStates saved_states(Cell cell);

// Float inputs of every width compute in float32; float64 stays float64.
at::ScalarType compute_type(at::ScalarType input);

// R per head: [Gx, N, D, D] -> [N, Gx·D, D] contiguous, in `type`.
at::Tensor heads_major(const at::Tensor& r, at::ScalarType type);
// The inverse, for the gradient: [N, Gx·D, D] -> [Gx, N, D, D].
at::Tensor gates_major(const at::Tensor& r_heads, int64_t gates);

// [S, B, 1, N, D] (or undefined: zeros) -> [B, S, N, D] contiguous in `type`.
at::Tensor initial_states_internal(const Inputs& in, int num_states, at::ScalarType type);

// The tensor itself if its last dim is contiguous (what Slots need), else a copy.
at::Tensor rows_contiguous(const at::Tensor& t);

// The op's outputs for a backend's kernels to write: states_all and last_states
// of ForwardResult (saved left empty).
ForwardResult allocate_outputs(const Problem& problem, const Inputs& in);

// Allocates what a forward writes and keeps: states (SavedStates) and cache in `compute`,
// R heads and h_gemm in `storage` (the backends' T and S). With
// `per_step_buffers` false, states, cache and h_gemm get their shapes but no
// memory (a backend that keeps the state on chip and will run no backward).
Saved allocate_forward(const Problem& problem, const Inputs& in, at::ScalarType compute,
                       at::ScalarType storage, bool per_step_buffers = true);

// The tensors one backward reads and writes besides Saved.
struct BackwardTensors {
  at::Tensor d_states, d_last;      // the external gradients in `storage`, or undefined
  at::Tensor d_wx, d_rh;            // [B, T, Gx, N, D], [N, T, B, Gx, D] in `storage`
  at::Tensor d_bias, d_s0, carry;   // [B, Gb, N, D], [B, S, N, D], [B, S, N, D] in compute
  at::Tensor dh_rec;                // [N, K, B, D] in compute: R_kᵀ δ_k, K = dh_rec_slots
};

BackwardTensors allocate_backward(const Saved& saved, const OutputGradients& grads,
                                  at::ScalarType storage, int64_t dh_rec_slots);

// δR = Σ_{t,b} δ(R h)ᵀ h_gemm as one GEMM per head over all T·B rows, in R's
// layout [Gx, N, D, D] and dtype.
at::Tensor recurrent_weight_gradient(const Saved& saved, const at::Tensor& d_rh);

}  // namespace flashrnn

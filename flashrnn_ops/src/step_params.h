// Fills the pointwise step params (pointwise.h) from the tensors of
// recurrence.h; the same for every backend.
#pragma once

#include "recurrence.h"
#include "tensor_slots.h"

namespace flashrnn {

inline Extent extent_of(const Saved& saved) {  // states [T, B, S, N, D]
  const at::Tensor& s = saved.states;
  return {s.size(0), s.size(1), s.size(3), s.size(4)};
}

// The saved states' slots: the run the cell's backward reads (SavedStates).
template <class V>
Slots<V> saved_states_slots(const Problem& problem, const Saved& saved) {
  Slots<V> s = slots<V>(saved.states, 0, 1, 2, 3);
  s.first_slot = saved_states(problem.cell).first;
  return s;
}

// wx [B, T, Gx, N, D] and bias [Gb, N, D] in S; rh [N, B, Gx, D] in T (undefined
// when it lives on chip); running [B, S, N, D] in T (undefined for the
// tensor-core kernels); the outputs states_out ([S', B, T, N, D] in S) and
// last_states ([S, B, 1, N, D] in S) are optional.
template <class T, class S>
ForwardStepParams<T, S> forward_params(const Problem& problem, const Saved& saved,
                                       const at::Tensor& wx, const at::Tensor& bias,
                                       const at::Tensor& rh, const at::Tensor& running,
                                       const at::Tensor& states_out, const at::Tensor& last_states) {
  ForwardStepParams<T, S> p;
  p.extent = extent_of(saved);
  p.wx = slots<const S>(wx, 1, 0, 2, 3);
  if (rh.defined()) p.rh = slots<const T>(rh, kBroadcast, 1, 2, 0);
  p.bias = slots<const S>(bias, kBroadcast, kBroadcast, 0, 1);
  p.s0 = slots<const T>(saved.s0, kBroadcast, 0, 1, 2);
  p.reset = reset_mask_of(saved.reset);
  if (running.defined()) p.running = slots<T>(running, kBroadcast, 0, 1, 2);
  p.states = saved_states_slots<T>(problem, saved);
  p.cache = slots<T>(saved.cache, 0, 1, 2, 3);
  if (states_out.defined()) {
    p.states_out = slots<S>(states_out, 2, 1, 0, 3);
    p.out_states = int(states_out.size(0));
  }
  if (last_states.defined()) p.last_states = slots<S>(last_states, kBroadcast, 1, 0, 3);
  p.h_gemm = slots<S>(saved.h_gemm, 0, 1, kBroadcast, 2);
  p.forward_clip = static_cast<T>(problem.forward_clip);
  return p;
}

template <class T, class S>
BackwardStepParams<T, S> backward_params(const Problem& problem, const Saved& saved,
                                         const BackwardTensors& b) {
  BackwardStepParams<T, S> p;
  p.extent = extent_of(saved);
  p.cache = slots<const T>(saved.cache, 0, 1, 2, 3);
  p.states = saved_states_slots<const T>(problem, saved);
  p.s0 = slots<const T>(saved.s0, kBroadcast, 0, 1, 2);
  p.reset = reset_mask_of(saved.reset);
  if (b.d_states.defined()) {
    p.d_states = slots<const S>(b.d_states, 2, 1, 0, 3);
    p.d_states_count = int(b.d_states.size(0));
  }
  if (b.d_last.defined()) p.d_last = slots<const S>(b.d_last, kBroadcast, 1, 0, 3);
  if (!problem.gradient_recurrent_cut) p.dh_rec = slots<const T>(b.dh_rec, kBroadcast, 2, 1, 0);
  p.dh_rec_slots = int(b.dh_rec.size(1));
  p.gradient_clip = static_cast<T>(problem.gradient_recurrent_clip);
  p.carry = slots<T>(b.carry, kBroadcast, 0, 1, 2);
  p.d_wx = slots<S>(b.d_wx, 1, 0, 2, 3);
  p.d_rh = slots<S>(b.d_rh, 1, 2, 3, 0);
  p.d_bias = slots<T>(b.d_bias, kBroadcast, 0, 1, 2);
  p.d_s0 = slots<T>(b.d_s0, kBroadcast, 0, 1, 2);
  return p;
}

}  // namespace flashrnn

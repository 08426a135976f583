// The pointwise half of a time step, as plain parameter structs and per-element
// functions templated on the cell. No torch: the CPU loop and the CUDA kernels
// of every backend call these functions.
//
// T is the compute type (float; double for the float64 reference), S the
// storage type of the tensors the caller sees (bf16, fp16, float, double).
// A Slots<> view addresses any [T, B, slots, N, D] tensor with its own strides
// (D contiguous), so user tensors are read and written in place.
#pragma once

#include <cstdint>

#include "cells/cell_math.h"
#include "cells/saved_states.h"

namespace flashrnn {

template <class V>
struct Slots {
  V* ptr = nullptr;
  int64_t time_stride = 0, batch_stride = 0, slot_stride = 0, head_stride = 0;
  int64_t first_row = 0;  // batch row stored at ptr (a tile's buffer in shared memory)
  int first_slot = 0;      // slot stored at ptr (a buffer that keeps some slots only)

  FLASHRNN_HD V& at(int64_t t, int64_t b, int k, int64_t n, int64_t d) const {
    return ptr[t * time_stride + (b - first_row) * batch_stride + (k - first_slot) * slot_stride +
               n * head_stride + d];
  }
};

struct Extent {
  int64_t steps = 0, batch = 0, heads = 0, head_dim = 0;

  FLASHRNN_HD int64_t elements_per_step() const { return batch * heads * head_dim; }
};

// Optional per-sample reset mask [B, T]: step t of row b starts from s0.
struct ResetMask {
  const bool* ptr = nullptr;
  int64_t batch_stride = 0, time_stride = 0;

  FLASHRNN_HD bool at(int64_t b, int64_t t) const {
    return ptr != nullptr && ptr[b * batch_stride + t * time_stride];
  }
};

template <class T, class S>
struct ForwardStepParams {
  Extent extent;
  Slots<const S> wx;     // [T, B, Gx, N, D] input pre-activations
  Slots<const T> rh;     // [B, Gx, N, D]    R·h of the current step (time_stride 0)
  Slots<const S> bias;   // [Gb, N, D]       (time and batch strides 0)
  Slots<const T> s0;     // [B, S, N, D]     initial states (time_stride 0)
  ResetMask reset;
  Slots<T> running;      // [B, S, N, D]     the states after the step before (time_stride 0):
                         // read, then overwritten (the tensor-core kernels keep them on chip)
  Slots<T> states;       // [T, B, R, N, D]  after each step, the R states the backward reads
                         // (cells/saved_states.h; first_slot the run's first)
  Slots<T> cache;        // [T, B, C, N, D]  what the cell's backward needs
  Slots<S> states_out;   // optional: the user's [S', B, T, N, D] output, its first
  int out_states = 0;    // S' states (h alone: 1; every state: S)
  Slots<S> last_states;  // optional: [S, B, 1, N, D] every state after step T-1 (time_stride 0)
  Slots<S> h_gemm;       // optional: [T, B, 1, N, D] the h that step t multiplies with R;
                         // step t writes entry t+1 (s0's h where row b resets at t+1)
  Slots<T> h_next;       // optional: the same h for the next step, kept on chip (fused)
  T forward_clip = 0;    // > 0: clamp h_t
};

template <class T, class S>
struct BackwardStepParams {
  Extent extent;
  Slots<const T> cache, states, s0;  // as the forward wrote them (states: the R read back)
  ResetMask reset;
  Slots<const S> d_states;  // optional: external gradient of states_all [S', B, T, N, D],
  int d_states_count = 0;   // its first S' states (h alone: 1)
  Slots<const S> d_last;    // optional: external gradient of last_states (time_stride 0)
  Slots<const T> dh_rec;    // optional: R_kᵀ δ(R h)_k of step t+1, [B, K, N, D], summed
  int dh_rec_slots = 1;     // over its K slots (1 when the GEMM already summed the gates)
  T gradient_clip = 0;      // > 0: clamp the sum
  Slots<T> carry;           // [B, S, N, D] gradient of s_t from step t+1 not through R;
                            // read, then overwritten with this step's
  Slots<S> d_wx;            // [T, B, Gx, N, D]
  Slots<S> d_rh;            // [T, B, Gx, N, D] gradient of R·h (for the R-side GEMMs)
  Slots<T> d_rh_next;       // optional: this step's δ(R h) kept on chip (fused)
  Slots<T> d_bias;          // [B, Gb, N, D] accumulated over steps (start at zero)
  Slots<T> d_s0;            // [B, S, N, D]  accumulated over steps (start at zero)
};

namespace detail {

template <class T, class S> FLASHRNN_HD T load(const S& v) { return static_cast<T>(v); }
template <class S, class T> FLASHRNN_HD S store(T v) { return static_cast<S>(v); }

// Element e of a step -> (b, n, d).
struct Index {
  int64_t b, n, d;
  FLASHRNN_HD Index(const Extent& x, int64_t e)
      : b(e / (x.heads * x.head_dim)), n((e / x.head_dim) % x.heads), d(e % x.head_dim) {}
};

}  // namespace detail

// Step t, element e ∈ [0, B·N·D) of the forward.
template <class Cell, class T, class S>
FLASHRNN_HD void forward_step_element(const ForwardStepParams<T, S>& p, int64_t t, int64_t e) {
  using detail::load;
  const detail::Index i(p.extent, e);
  T wx[Cell::kGates], rh[Cell::kGates], bias[Cell::kBiases];
  T s_prev[Cell::kStates], s_next[Cell::kStates], cache[Cell::kCache];
  for (int k = 0; k < Cell::kGates; ++k) {
    wx[k] = load<T>(p.wx.at(t, i.b, k, i.n, i.d));
    rh[k] = p.rh.at(0, i.b, k, i.n, i.d);
  }
  for (int k = 0; k < Cell::kBiases; ++k) bias[k] = load<T>(p.bias.at(0, 0, k, i.n, i.d));
  const bool from_initial = t == 0 || p.reset.at(i.b, t);
  for (int s = 0; s < Cell::kStates; ++s)
    s_prev[s] = from_initial ? p.s0.at(0, i.b, s, i.n, i.d) : p.running.at(0, i.b, s, i.n, i.d);

  Cell::forward(wx, rh, bias, s_prev, s_next, cache);
  if (p.forward_clip > T(0)) s_next[0] = cells::clamp_(s_next[0], -p.forward_clip, p.forward_clip);

  for (int s = 0; s < Cell::kStates; ++s) {
    p.running.at(0, i.b, s, i.n, i.d) = s_next[s];
    if (cells::reads_state_back<Cell>(s)) p.states.at(t, i.b, s, i.n, i.d) = s_next[s];
  }
  for (int c = 0; c < Cell::kCache; ++c) p.cache.at(t, i.b, c, i.n, i.d) = cache[c];
  if (p.states_out.ptr)
    for (int s = 0; s < Cell::kStates; ++s)  // (a constant bound: s_next stays in registers)
      if (s < p.out_states) p.states_out.at(t, i.b, s, i.n, i.d) = detail::store<S>(s_next[s]);
  if (p.last_states.ptr && t + 1 == p.extent.steps)
    for (int s = 0; s < Cell::kStates; ++s) p.last_states.at(0, i.b, s, i.n, i.d) = detail::store<S>(s_next[s]);
  if (t + 1 < p.extent.steps) {
    const T h = p.reset.at(i.b, t + 1) ? p.s0.at(0, i.b, 0, i.n, i.d) : s_next[0];
    if (p.h_gemm.ptr) p.h_gemm.at(t + 1, i.b, 0, i.n, i.d) = detail::store<S>(h);
    if (p.h_next.ptr) p.h_next.at(0, i.b, 0, i.n, i.d) = h;
  }
}

// Σ_k R_kᵀ δ(R h)_k as it reaches h: zero when cut (no dh_rec), clamped when clipped.
template <class T, class S>
FLASHRNN_HD T gradient_through_r(const BackwardStepParams<T, S>& p, const detail::Index& i) {
  if (!p.dh_rec.ptr) return T(0);
  T g = T(0);
  for (int k = 0; k < p.dh_rec_slots; ++k) g += p.dh_rec.at(0, i.b, k, i.n, i.d);
  return p.gradient_clip > T(0) ? cells::clamp_(g, -p.gradient_clip, p.gradient_clip) : g;
}

// The gradient reaching s_t from step t+1 (nothing at t = T-1). Where row b
// resets at t+1, step t+1 did not read s_t: the gradient goes to the initial states.
template <class Cell, class T, class S>
FLASHRNN_HD void incoming_gradient(const BackwardStepParams<T, S>& p, int64_t t,
                                   const detail::Index& i, T* incoming) {
  const bool last = t + 1 == p.extent.steps;
  for (int s = 0; s < Cell::kStates; ++s)
    incoming[s] = last ? T(0) : p.carry.at(0, i.b, s, i.n, i.d);
  if (last) return;
  incoming[0] += gradient_through_r(p, i);
  if (p.reset.at(i.b, t + 1)) {
    for (int s = 0; s < Cell::kStates; ++s) {
      p.d_s0.at(0, i.b, s, i.n, i.d) += incoming[s];
      incoming[s] = T(0);
    }
  }
}

// Step t, element e of the backward (steps run T-1 … 0).
template <class Cell, class T, class S>
FLASHRNN_HD void backward_step_element(const BackwardStepParams<T, S>& p, int64_t t, int64_t e) {
  using detail::load;
  const detail::Index i(p.extent, e);
  T ds[Cell::kStates];
  incoming_gradient<Cell>(p, t, i, ds);
  if (p.d_states.ptr)
    for (int s = 0; s < Cell::kStates; ++s)
      if (s < p.d_states_count) ds[s] += load<T>(p.d_states.at(t, i.b, s, i.n, i.d));
  if (p.d_last.ptr && t + 1 == p.extent.steps)
    for (int s = 0; s < Cell::kStates; ++s) ds[s] += load<T>(p.d_last.at(0, i.b, s, i.n, i.d));

  T cache[Cell::kCache], s_prev[Cell::kStates] = {}, s_next[Cell::kStates] = {};
  const bool from_initial = t == 0 || p.reset.at(i.b, t);
  for (int c = 0; c < Cell::kCache; ++c) cache[c] = p.cache.at(t, i.b, c, i.n, i.d);
  for (int s = 0; s < Cell::kStates; ++s) {  // the others were not kept, and backward() does not read them
    if (!cells::reads_state_back<Cell>(s)) continue;
    s_prev[s] = from_initial ? p.s0.at(0, i.b, s, i.n, i.d) : p.states.at(t - 1, i.b, s, i.n, i.d);
    s_next[s] = p.states.at(t, i.b, s, i.n, i.d);
  }
  T dwx[Cell::kGates], drh[Cell::kGates], db[Cell::kBiases], ds_prev[Cell::kStates];
  Cell::backward(cache, s_prev, s_next, ds, dwx, drh, db, ds_prev);

  for (int k = 0; k < Cell::kGates; ++k) {
    p.d_wx.at(t, i.b, k, i.n, i.d) = detail::store<S>(dwx[k]);
    p.d_rh.at(t, i.b, k, i.n, i.d) = detail::store<S>(drh[k]);
    if (p.d_rh_next.ptr) p.d_rh_next.at(0, i.b, k, i.n, i.d) = drh[k];
  }
  for (int k = 0; k < Cell::kBiases; ++k) p.d_bias.at(0, i.b, k, i.n, i.d) += db[k];
  for (int s = 0; s < Cell::kStates; ++s) p.carry.at(0, i.b, s, i.n, i.d) = ds_prev[s];
}

// After step 0: what reaches the initial states (carry and, for h, through R).
template <class Cell, class T, class S>
FLASHRNN_HD void initial_state_gradient_element(const BackwardStepParams<T, S>& p, int64_t e) {
  const detail::Index i(p.extent, e);
  for (int s = 0; s < Cell::kStates; ++s)
    p.d_s0.at(0, i.b, s, i.n, i.d) +=
        p.carry.at(0, i.b, s, i.n, i.d) + (s == 0 ? gradient_through_r(p, i) : T(0));
}

}  // namespace flashrnn

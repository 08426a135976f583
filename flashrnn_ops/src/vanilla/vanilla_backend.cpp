#include "vanilla/vanilla_backend.h"

#include <ATen/ATen.h>

#include "cells/registry.h"
#include "tensor_slots.h"
#include "vanilla/pointwise_steps.h"

namespace flashrnn::vanilla {
namespace {

Extent extent_of(const at::Tensor& states) {  // [T, B, S, N, D]
  return {states.size(0), states.size(1), states.size(3), states.size(4)};
}

template <class T>
ForwardResult forward_typed(const Problem& problem, const Inputs& in) {
  const at::ScalarType ct = compute_type(in.wx.scalar_type());
  const int64_t B = in.wx.size(0), steps = in.wx.size(1), G = in.wx.size(2);
  const int64_t N = in.wx.size(3), D = in.wx.size(4);
  const int num_states = cell_layout(problem.cell).states;
  const auto opts = in.wx.options().dtype(ct);

  Saved saved;
  saved.wx_type = in.wx.scalar_type();
  saved.r_type = in.r.scalar_type();
  saved.b_type = in.b.scalar_type();
  saved.biases = in.b.size(0);
  saved.r_heads = heads_major(in.r, ct);
  saved.s0 = initial_states_internal(in, num_states, ct);
  saved.reset = in.reset;
  saved.states = at::empty({steps, B, num_states, N, D}, opts);
  saved.cache = at::empty({steps, B, cache_slots(problem.cell), N, D}, opts);
  saved.h_gemm = at::empty({steps, B, N, D}, opts);
  saved.h_gemm[0].copy_(saved.s0.select(1, 0));
  const at::Tensor wx = in.wx.to(ct).contiguous();
  const at::Tensor bias = in.b.to(ct).contiguous();
  const at::Tensor rh = at::empty({N, B, G, D}, opts);

  ForwardStepParams<T, T> p;
  p.extent = extent_of(saved.states);
  p.wx = slots<const T>(wx, 1, 0, 2, 3);
  p.rh = slots<const T>(rh, kBroadcast, 1, 2, 0);
  p.bias = slots<const T>(bias, kBroadcast, kBroadcast, 0, 1);
  p.s0 = slots<const T>(saved.s0, kBroadcast, 0, 1, 2);
  p.reset = reset_mask_of(saved.reset);
  p.states = slots<T>(saved.states, 0, 1, 2, 3);
  p.cache = slots<T>(saved.cache, 0, 1, 2, 3);
  p.h_gemm = slots<T>(saved.h_gemm, 0, 1, kBroadcast, 2);
  p.forward_clip = static_cast<T>(problem.forward_clip);

  const at::Tensor r_t = saved.r_heads.transpose(1, 2);  // [N, D, Gx·D]
  at::Tensor rh_rows = rh.view({N, B, G * D});
  for (int64_t t = 0; t < steps; ++t) {
    at::bmm_out(rh_rows, saved.h_gemm[t].transpose(0, 1), r_t);  // [N, B, D] x [N, D, Gx·D]
    forward_step<T>(problem.cell, p, t, in.wx.device());
  }
  // [T, B, S, N, D] -> [S, B, T, N, D] in the input dtype.
  at::Tensor states_all = saved.states.permute({2, 1, 0, 3, 4}).to(saved.wx_type).contiguous();
  return {states_all, saved};
}

template <class T>
Gradients backward_typed(const Problem& problem, const Saved& saved, const OutputGradients& grads) {
  const int64_t steps = saved.states.size(0), B = saved.states.size(1);
  const int64_t N = saved.states.size(3), D = saved.states.size(4);
  const int64_t G = saved.r_heads.size(1) / D;
  const auto opts = saved.states.options();
  const at::ScalarType ct = saved.states.scalar_type();

  at::Tensor d_wx = at::empty({B, steps, G, N, D}, opts);
  at::Tensor d_rh = at::empty({N, steps, B, G, D}, opts);
  at::Tensor d_bias = at::zeros({B, saved.biases, N, D}, opts);
  at::Tensor d_s0 = at::zeros_like(saved.s0);
  at::Tensor carry = at::empty_like(saved.s0);
  at::Tensor dh_rec = at::empty({N, B, D}, opts);
  const at::Tensor d_states =
      grads.d_states_all.defined() ? grads.d_states_all.to(ct).contiguous() : at::Tensor();
  const at::Tensor d_last = grads.d_last.defined() ? grads.d_last.to(ct).contiguous() : at::Tensor();

  BackwardStepParams<T, T> p;
  p.extent = extent_of(saved.states);
  p.cache = slots<const T>(saved.cache, 0, 1, 2, 3);
  p.states = slots<const T>(saved.states, 0, 1, 2, 3);
  p.s0 = slots<const T>(saved.s0, kBroadcast, 0, 1, 2);
  p.reset = reset_mask_of(saved.reset);
  if (d_states.defined()) p.d_states = slots<const T>(d_states, 2, 1, 0, 3);
  if (d_last.defined()) p.d_last = slots<const T>(d_last, kBroadcast, 1, 0, 3);
  if (!problem.gradient_recurrent_cut) p.dh_rec = slots<const T>(dh_rec, kBroadcast, 1, kBroadcast, 0);
  p.gradient_clip = static_cast<T>(problem.gradient_recurrent_clip);
  p.carry = slots<T>(carry, kBroadcast, 0, 1, 2);
  p.d_wx = slots<T>(d_wx, 1, 0, 2, 3);
  p.d_rh = slots<T>(d_rh, 1, 2, 3, 0);
  p.d_bias = slots<T>(d_bias, kBroadcast, 0, 1, 2);
  p.d_s0 = slots<T>(d_s0, kBroadcast, 0, 1, 2);

  // Σ_k R_kᵀ δ(R h)_k of step t: [N, B, Gx·D] x [N, Gx·D, D] -> [N, B, D].
  const auto through_r = [&](int64_t t) {
    if (!problem.gradient_recurrent_cut)
      at::bmm_out(dh_rec, d_rh.select(1, t).view({N, B, G * D}), saved.r_heads);
  };
  const c10::Device device = saved.states.device();
  for (int64_t t = steps - 1; t >= 0; --t) {
    if (t + 1 < steps) through_r(t + 1);
    backward_step<T>(problem.cell, p, t, device);
  }
  through_r(0);
  initial_state_gradient<T>(problem.cell, p, device);

  // δR per head = Σ_{t,b} δ(R h)ᵀ h: one GEMM over all T·B rows.
  const at::Tensor d_r_heads = at::bmm(d_rh.view({N, steps * B, G * D}).transpose(1, 2),
                                       saved.h_gemm.view({steps * B, N, D}).transpose(0, 1));
  Gradients g;
  g.d_wx = d_wx.to(saved.wx_type);
  g.d_r = gates_major(d_r_heads, G).to(saved.r_type);
  g.d_b = d_bias.sum(0).to(saved.b_type);
  g.d_s0 = d_s0;
  return g;
}

}  // namespace

ForwardResult forward(const Problem& problem, const Inputs& in) {
  if (compute_type(in.wx.scalar_type()) == at::kDouble) return forward_typed<double>(problem, in);
  return forward_typed<float>(problem, in);
}

Gradients backward(const Problem& problem, const Saved& saved, const OutputGradients& grads) {
  if (saved.states.scalar_type() == at::kDouble) return backward_typed<double>(problem, saved, grads);
  return backward_typed<float>(problem, saved, grads);
}

}  // namespace flashrnn::vanilla

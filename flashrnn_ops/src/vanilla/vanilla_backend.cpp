#include "vanilla/vanilla_backend.h"

#include <ATen/ATen.h>

#include "cells/registry.h"
#include "pointwise_dispatch.h"

namespace flashrnn::vanilla {
namespace {

int cache_slots(Cell cell) {
  return cells::dispatch_cell(cell, [](auto c) { return decltype(c)::kCache; });
}

// R as one matrix per head: [N, Gx·D, D], row (g, i) of head n is R[g, n, i, :].
at::Tensor heads_major(const at::Tensor& r) {
  const int64_t gates = r.size(0), heads = r.size(1), dim = r.size(2);
  return r.permute({1, 0, 2, 3}).reshape({heads, gates * dim, dim});
}

// R·h for every gate and head: h [B, N, D] -> [B, Gx, N, D].
at::Tensor recurrent_term(const at::Tensor& r_heads, const at::Tensor& h, int64_t gates) {
  const int64_t batch = h.size(0), heads = h.size(1), dim = h.size(2);
  const at::Tensor rh = at::matmul(r_heads, h.permute({1, 2, 0}));  // [N, Gx·D, B]
  return rh.view({heads, gates, dim, batch}).permute({3, 1, 0, 2}).contiguous();
}

// Σ_g R[g, n]ᵀ δ[b, g, n]: drh [B, Gx, N, D] -> [B, N, D].
at::Tensor recurrent_term_transposed(const at::Tensor& r_heads, const at::Tensor& drh) {
  const int64_t batch = drh.size(0), gates = drh.size(1), heads = drh.size(2), dim = drh.size(3);
  const at::Tensor d = drh.permute({2, 1, 3, 0}).reshape({heads, gates * dim, batch});
  return at::matmul(r_heads.transpose(1, 2), d).permute({2, 0, 1});  // [B, N, D]
}

// The states step t starts from: s_{t-1}, or s0 where the reset mask is set.
at::Tensor previous_states(const ForwardInputs& in, const at::Tensor& states, int64_t t) {
  const at::Tensor prev = t == 0 ? in.s0 : states[t - 1];
  if (!in.reset.defined()) return prev;
  const at::Tensor mask = in.reset.select(1, t).view({-1, 1, 1, 1});
  return at::where(mask, in.s0, prev);
}

}  // namespace

ForwardOutputs forward(const ForwardInputs& in) {
  const int64_t batch = in.wx.size(0), steps = in.wx.size(1), gates = in.wx.size(2);
  const int64_t heads = in.wx.size(3), dim = in.wx.size(4), num_states = in.s0.size(1);
  const at::Tensor r_heads = heads_major(in.r);
  ForwardOutputs out;
  out.states = at::empty({steps, batch, num_states, heads, dim}, in.wx.options());
  out.cache = at::empty({steps, batch, cache_slots(in.cell), heads, dim}, in.wx.options());
  for (int64_t t = 0; t < steps; ++t) {
    const at::Tensor s_prev = previous_states(in, out.states, t);
    const at::Tensor rh = recurrent_term(r_heads, s_prev.select(1, 0), gates);
    pointwise_forward(in.cell,
                      {in.wx.select(1, t), rh, in.b, s_prev, out.states[t], out.cache[t]},
                      in.forward_clip);
  }
  return out;
}

Gradients backward(const ForwardInputs& in, const ForwardOutputs& out, const at::Tensor& d_states,
                   bool gradient_recurrent_cut, double gradient_recurrent_clip) {
  const int64_t batch = in.wx.size(0), steps = in.wx.size(1), gates = in.wx.size(2);
  const int64_t heads = in.wx.size(3), dim = in.wx.size(4);
  const at::Tensor r_heads = heads_major(in.r);

  Gradients g;
  g.d_wx = at::empty_like(in.wx);
  g.d_b = at::zeros_like(in.b);
  g.d_s0 = at::zeros_like(in.s0);
  const at::Tensor drh_all = at::empty({steps, batch, gates, heads, dim}, in.wx.options());
  const at::Tensor db_step = at::empty({batch, in.b.size(0), heads, dim}, in.wx.options());
  at::Tensor carry = at::zeros_like(in.s0);  // gradient reaching s_t from step t+1
  at::Tensor ds_prev = at::empty_like(in.s0);

  for (int64_t t = steps - 1; t >= 0; --t) {
    const at::Tensor ds = d_states[t] + carry;
    pointwise_backward(in.cell, {out.cache[t], previous_states(in, out.states, t), out.states[t],
                                 ds, g.d_wx.select(1, t), drh_all[t], db_step, ds_prev});
    g.d_b += db_step.sum(0);
    std::swap(carry, ds_prev);
    if (!gradient_recurrent_cut) {
      at::Tensor through_r = recurrent_term_transposed(r_heads, drh_all[t]);
      if (gradient_recurrent_clip > 0)
        through_r = through_r.clamp(-gradient_recurrent_clip, gradient_recurrent_clip);
      carry.select(1, 0) += through_r;
    }
    if (in.reset.defined()) {  // a reset step's gradient goes to the initial states
      const at::Tensor mask = in.reset.select(1, t).view({-1, 1, 1, 1});
      g.d_s0 += at::where(mask, carry, at::zeros_like(carry));
      carry = at::where(mask, at::zeros_like(carry), carry);
    }
  }
  g.d_s0 += carry;

  // δR[g, n] = Σ_{t, b} δ(R h)[t, b, g, n] ⊗ h_prev[t, b, n]: one GEMM per head.
  at::Tensor h_prev = at::cat({in.s0.select(1, 0).unsqueeze(0),
                               out.states.narrow(0, 0, steps - 1).select(2, 0)});  // [T, B, N, D]
  if (in.reset.defined()) {
    const at::Tensor mask = in.reset.transpose(0, 1).view({steps, batch, 1, 1});
    h_prev = at::where(mask, in.s0.select(1, 0).unsqueeze(0), h_prev);
  }
  const at::Tensor d = drh_all.permute({3, 2, 4, 0, 1}).reshape({heads, gates * dim, steps * batch});
  const at::Tensor hp = h_prev.permute({2, 0, 1, 3}).reshape({heads, steps * batch, dim});
  g.d_r = at::matmul(d, hp).view({heads, gates, dim, dim}).permute({1, 0, 2, 3}).contiguous();
  return g;
}

}  // namespace flashrnn::vanilla

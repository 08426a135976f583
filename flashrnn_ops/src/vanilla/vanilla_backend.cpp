#include "vanilla/vanilla_backend.h"

#include <ATen/ATen.h>

#include "step_params.h"
#include "vanilla/pointwise_steps.h"

namespace flashrnn::vanilla {
namespace {

template <class T>
ForwardResult forward_typed(const Problem& problem, const Inputs& in) {
  const at::ScalarType ct = compute_type(in.wx.scalar_type());
  const int64_t B = in.wx.size(0), steps = in.wx.size(1), G = in.wx.size(2);
  const int64_t N = in.wx.size(3), D = in.wx.size(4);
  Saved saved = allocate_forward(problem, in, ct, ct);
  saved.h_gemm[0].copy_(saved.s0.select(1, 0));
  Inputs computed = in;  // everything in the compute type, the outputs too
  computed.wx = in.wx.to(ct).contiguous();
  const at::Tensor bias = in.b.to(ct).contiguous();
  const at::Tensor rh = at::empty({N, B, G, D}, saved.s0.options());
  const at::Tensor running = at::empty_like(saved.s0);
  ForwardResult out = allocate_outputs(problem, computed);
  const auto p = forward_params<T, T>(problem, saved, computed.wx, bias, rh, running, out.states_all,
                                      out.last_states);

  const at::Tensor r_t = saved.r_heads.transpose(1, 2);  // [N, D, Gx·D]
  at::Tensor rh_rows = rh.view({N, B, G * D});
  for (int64_t t = 0; t < steps; ++t) {
    at::bmm_out(rh_rows, saved.h_gemm[t].transpose(0, 1), r_t);  // [N, B, D] x [N, D, Gx·D]
    forward_step<T>(problem.cell, p, t, in.wx.device());
  }
  return {out.states_all.to(saved.wx_type), out.last_states.to(saved.wx_type), saved};
}

template <class T>
Gradients backward_typed(const Problem& problem, const Saved& saved, const OutputGradients& grads) {
  const int64_t steps = saved.states.size(0), B = saved.states.size(1), D = saved.states.size(4);
  const int64_t N = saved.r_heads.size(0), G = saved.r_heads.size(1) / D;
  BackwardTensors b = allocate_backward(saved, grads, saved.states.scalar_type(), 1);
  const auto p = backward_params<T, T>(problem, saved, b);

  // Σ_k R_kᵀ δ(R h)_k of step t: [N, B, Gx·D] x [N, Gx·D, D] -> [N, B, D].
  at::Tensor dh_rec = b.dh_rec.select(1, 0);
  const auto through_r = [&](int64_t t) {
    if (!problem.gradient_recurrent_cut)
      at::bmm_out(dh_rec, b.d_rh.select(1, t).view({N, B, G * D}), saved.r_heads);
  };
  const c10::Device device = saved.states.device();
  for (int64_t t = steps - 1; t >= 0; --t) {
    if (t + 1 < steps) through_r(t + 1);
    backward_step<T>(problem.cell, p, t, device);
  }
  through_r(0);
  initial_state_gradient<T>(problem.cell, p, device);

  return {b.d_wx.to(saved.wx_type), recurrent_weight_gradient(saved, b.d_rh),
          b.d_bias.sum(0).to(saved.b_type), b.d_s0};
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

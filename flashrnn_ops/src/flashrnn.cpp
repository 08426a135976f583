// The public entry point: validation, backend choice and the autograd function.
#include "flashrnn/flashrnn.h"

#include <string>

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include "cells/registry.h"
#include "validate.h"
#include "vanilla/vanilla_backend.h"

namespace flashrnn {

CellLayout cell_layout(Cell cell) {
  return cells::dispatch_cell(cell, [](auto c) {
    using C = decltype(c);
    return CellLayout{C::kGates, C::kBiases, C::kStates};
  });
}

std::string_view to_string(Cell cell) {
  return cells::dispatch_cell(cell, [](auto c) { return std::string_view(decltype(c)::kName); });
}

std::string_view to_string(Backend backend) {
  switch (backend) {
    case Backend::kVanilla: return "vanilla";
    case Backend::kAlternating: return "alternating";
    case Backend::kFused: return "fused";
    case Backend::kAuto: return "auto";
  }
  return "?";
}

Cell parse_cell(std::string_view name) {
  for (Cell c : {Cell::kLstm, Cell::kSlstm, Cell::kGru, Cell::kElman})
    if (to_string(c) == name) return c;
  throw InputError("flashrnn: unknown cell '" + std::string(name) +
                   "'; choose one of lstm, slstm, gru, elman");
}

Backend parse_backend(std::string_view name) {
  for (Backend b : {Backend::kVanilla, Backend::kAlternating, Backend::kFused, Backend::kAuto})
    if (to_string(b) == name) return b;
  throw InputError("flashrnn: unknown backend '" + std::string(name) +
                   "'; choose one of vanilla, alternating, fused, auto");
}

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Float inputs of every width compute in float32; float64 stays float64 (tests).
at::ScalarType compute_type(at::ScalarType t) { return t == at::kDouble ? at::kDouble : at::kFloat; }

// The one recurrent autograd function; its backward is the backend's backward.
class FlashRnnFunction : public torch::autograd::Function<FlashRnnFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& wx, const at::Tensor& r,
                               const at::Tensor& b,
                               const std::optional<at::Tensor>& initial_states,
                               const std::optional<at::Tensor>& reset, int64_t cell, bool gradient_recurrent_cut,
                               double gradient_recurrent_clip, double forward_clip) {
    const at::ScalarType ct = compute_type(wx.scalar_type());
    const int64_t batch = wx.size(0), steps = wx.size(1), heads = wx.size(3), dim = wx.size(4);
    const int64_t num_states = cell_layout(static_cast<Cell>(cell)).states;

    vanilla::ForwardInputs in;
    in.cell = static_cast<Cell>(cell);
    in.wx = wx.to(ct).contiguous();
    in.r = r.to(ct).contiguous();
    in.b = b.to(ct).contiguous();
    in.s0 = initial_states
                ? initial_states->squeeze(2).permute({1, 0, 2, 3}).to(ct).contiguous()
                : at::zeros({batch, num_states, heads, dim}, in.wx.options());
    if (reset) in.reset = reset->contiguous();
    in.forward_clip = forward_clip;
    vanilla::ForwardOutputs out = vanilla::forward(in);

    // [T, B, S, N, D] -> [S, B, T, N, D] in the input dtype.
    at::Tensor states_all = out.states.permute({2, 1, 0, 3, 4}).to(wx.scalar_type()).contiguous();
    at::Tensor last_states = states_all.narrow(2, steps - 1, 1).clone();

    ctx->saved_data["wx"] = in.wx;
    ctx->saved_data["r"] = in.r;
    ctx->saved_data["b"] = in.b;
    ctx->saved_data["s0"] = in.s0;
    ctx->saved_data["reset"] = in.reset;
    ctx->saved_data["states"] = out.states;
    ctx->saved_data["cache"] = out.cache;
    ctx->saved_data["has_initial_states"] = initial_states.has_value();
    ctx->saved_data["cell"] = cell;
    ctx->saved_data["cut"] = gradient_recurrent_cut;
    ctx->saved_data["clip"] = gradient_recurrent_clip;
    ctx->saved_data["dtypes"] = std::vector<int64_t>{
        int64_t(wx.scalar_type()), int64_t(r.scalar_type()), int64_t(b.scalar_type())};
    return {states_all, last_states};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto& saved = ctx->saved_data;
    vanilla::ForwardInputs in;
    in.cell = static_cast<Cell>(saved["cell"].toInt());
    in.wx = saved["wx"].toTensor();
    in.r = saved["r"].toTensor();
    in.b = saved["b"].toTensor();
    in.s0 = saved["s0"].toTensor();
    in.reset = saved["reset"].toTensor();
    vanilla::ForwardOutputs out{saved["states"].toTensor(), saved["cache"].toTensor()};
    const int64_t steps = in.wx.size(1);

    // External gradients of states_all and last_states, as [T, B, S, N, D].
    at::Tensor d_states = at::zeros_like(out.states);
    if (grads[0].defined()) d_states += grads[0].permute({2, 1, 0, 3, 4}).to(d_states.dtype());
    if (grads[1].defined())
      d_states[steps - 1] += grads[1].select(2, 0).permute({1, 0, 2, 3}).to(d_states.dtype());

    const vanilla::Gradients g = vanilla::backward(in, out, d_states, saved["cut"].toBool(),
                                                   saved["clip"].toDouble());
    const auto dtypes = saved["dtypes"].toIntVector();
    const auto type_of = [&](int i) { return static_cast<at::ScalarType>(dtypes[i]); };
    at::Tensor d_initial_states;  // no gradient for states the caller did not pass
    if (saved["has_initial_states"].toBool())
      d_initial_states = g.d_s0.permute({1, 0, 2, 3}).unsqueeze(2).to(type_of(0));
    return {g.d_wx.to(type_of(0)), g.d_r.to(type_of(1)), g.d_b.to(type_of(2)), d_initial_states,
            at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// The backend that runs a case; only vanilla is built so far.
Backend resolve_backend(Backend requested) {
  switch (requested) {
    case Backend::kVanilla:
    case Backend::kAuto: return Backend::kVanilla;
    case Backend::kAlternating:
    case Backend::kFused:
      throw InputError("flashrnn: the " + std::string(to_string(requested)) +
                       " backend is not built yet; use backend=vanilla or auto");
  }
  return Backend::kVanilla;
}

}  // namespace

Result flashrnn(const at::Tensor& Wx, const at::Tensor& R, const at::Tensor& b,
                const std::optional<at::Tensor>& initial_states, const Options& options) {
  validate_inputs(Wx, R, b, initial_states, options);
  resolve_backend(options.backend);
  const variable_list outputs = FlashRnnFunction::apply(
      Wx, R, b, initial_states, options.reset_mask, static_cast<int64_t>(options.cell), options.gradient_recurrent_cut,
      options.gradient_recurrent_clip, options.forward_clip);
  return {outputs[0], outputs[1]};
}

}  // namespace flashrnn

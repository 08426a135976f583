// The public entry point: validation, backend choice and the autograd function.
#include "flashrnn/flashrnn.h"

#include <string>

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include "cells/registry.h"
#include "alternating/alternating_backend.h"
#include "backend_choice.h"
#include "fused/fused_backend.h"
#include "recurrence.h"
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
  for (Cell c : cells::kAllCells)
    if (to_string(c) == name) return c;
  throw InputError("flashrnn: unknown cell '" + std::string(name) + "'; choose one of " + cells::cell_names());
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

// ctx->saved_data keys of Saved and Problem.
void save(AutogradContext* ctx, Backend backend, const Problem& problem, const Saved& s) {
  auto& d = ctx->saved_data;
  d["r_heads"] = s.r_heads;
  d["s0"] = s.s0;
  d["reset"] = s.reset;
  d["states"] = s.states;
  d["cache"] = s.cache;
  d["h_gemm"] = s.h_gemm;
  d["types"] = std::vector<int64_t>{int64_t(s.wx_type), int64_t(s.r_type), int64_t(s.b_type)};
  d["biases"] = s.biases;
  d["cell"] = int64_t(problem.cell);
  d["cut"] = problem.gradient_recurrent_cut;
  d["clip"] = problem.gradient_recurrent_clip;
  d["forward_clip"] = problem.forward_clip;
  d["output_h_only"] = problem.output_h_only;
  d["backend"] = int64_t(backend);
}

std::tuple<Backend, Problem, Saved> load(AutogradContext* ctx) {
  auto& d = ctx->saved_data;
  Problem problem{static_cast<Cell>(d["cell"].toInt()), d["cut"].toBool(), d["clip"].toDouble(),
                  d["forward_clip"].toDouble()};
  problem.output_h_only = d["output_h_only"].toBool();
  Saved s;
  s.r_heads = d["r_heads"].toTensor();
  s.s0 = d["s0"].toTensor();
  s.reset = d["reset"].toTensor();
  s.states = d["states"].toTensor();
  s.cache = d["cache"].toTensor();
  s.h_gemm = d["h_gemm"].toTensor();
  const auto types = d["types"].toIntVector();
  s.wx_type = static_cast<at::ScalarType>(types[0]);
  s.r_type = static_cast<at::ScalarType>(types[1]);
  s.b_type = static_cast<at::ScalarType>(types[2]);
  s.biases = d["biases"].toInt();
  return {static_cast<Backend>(d["backend"].toInt()), problem, s};
}

// The one recurrent autograd function; forward and backward are the backend's.
// With `recompute` the context keeps the inputs instead of the forward's
// per-step buffers, and the backward makes those again first.
class FlashRnnFunction : public torch::autograd::Function<FlashRnnFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& wx, const at::Tensor& r,
                               const at::Tensor& b,
                               const std::optional<at::Tensor>& initial_states,
                               const std::optional<at::Tensor>& reset, int64_t backend, int64_t cell,
                               bool gradient_recurrent_cut, double gradient_recurrent_clip,
                               double forward_clip, bool keep_for_backward, bool recompute,
                               bool output_h_only) {
    recompute = recompute && keep_for_backward;
    const Problem problem{static_cast<Cell>(cell),    gradient_recurrent_cut,
                          gradient_recurrent_clip,    forward_clip,
                          keep_for_backward && !recompute, output_h_only};
    const at::Tensor reset_rows = reset ? reset->contiguous() : at::Tensor();
    const Inputs in{wx, r, b, initial_states.value_or(at::Tensor()), reset_rows};
    const Backend chosen = static_cast<Backend>(backend);
    ForwardResult result = forward_on(chosen, problem, in);
    Saved kept = result.saved;
    if (recompute) {
      ctx->save_for_backward({wx, r, b, in.initial_states, reset_rows});
      kept.states = kept.cache = kept.h_gemm = at::Tensor();
    }
    save(ctx, chosen, problem, kept);
    ctx->saved_data["recompute"] = recompute;
    ctx->saved_data["backward_backend"] = int64_t(backward_backend(chosen, problem.cell, in));
    ctx->saved_data["has_initial_states"] = initial_states.has_value();
    if (initial_states) ctx->saved_data["initial_type"] = int64_t(initial_states->scalar_type());
    return {result.states_all, result.last_states};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto [backend, problem, saved] = load(ctx);
    if (ctx->saved_data["recompute"].toBool()) {
      const variable_list in = ctx->get_saved_variables();
      problem.keep_for_backward = true;
      saved = forward_on(backend, problem, Inputs{in[0], in[1], in[2], in[3], in[4]}).saved;
    }
    const OutputGradients output_grads{grads[0], grads[1]};
    const auto backward_by = static_cast<Backend>(ctx->saved_data["backward_backend"].toInt());
    const Gradients g = backward_on(backward_by, problem, saved, output_grads);
    at::Tensor d_initial_states;  // no gradient for states the caller did not pass
    if (ctx->saved_data["has_initial_states"].toBool())
      d_initial_states = g.d_s0.permute({1, 0, 2, 3}).unsqueeze(2).to(
          static_cast<at::ScalarType>(ctx->saved_data["initial_type"].toInt()));
    return {g.d_wx,       g.d_r,        g.d_b,        d_initial_states, at::Tensor(),
            at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(),     at::Tensor(),
            at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

ForwardResult forward_on(Backend backend, const Problem& problem, const Inputs& in) {
  return backend == Backend::kFused         ? fused::forward(problem, in)
         : backend == Backend::kAlternating ? alternating::forward(problem, in)
                                            : vanilla::forward(problem, in);
}

Gradients backward_on(Backend backend, const Problem& problem, const Saved& saved, const OutputGradients& grads) {
  return backend == Backend::kFused         ? fused::backward(problem, saved, grads)
         : backend == Backend::kAlternating ? alternating::backward(problem, saved, grads)
                                            : vanilla::backward(problem, saved, grads);
}

Backend backward_backend(Backend forward, Cell cell, const Inputs& in) {
  return forward == Backend::kFused && !fused::runs_backward(cell, in) ? Backend::kAlternating : forward;
}

// The backend that runs a case: the requested one, or for `auto` the fastest
// that supports it. Falling back on a GPU is said once.
Backend resolve_backend(Backend requested, Cell cell, const Inputs& in) {
  const std::string alternating_unsupported = alternating::unsupported_reason(in);
  switch (requested) {
    case Backend::kVanilla: return Backend::kVanilla;
    case Backend::kAlternating:
      if (!alternating_unsupported.empty()) throw InputError("flashrnn: " + alternating_unsupported);
      return Backend::kAlternating;
    case Backend::kFused: {
      const std::string fused_unsupported = fused::unsupported_reason(cell, in);
      if (!fused_unsupported.empty()) throw InputError("flashrnn: " + fused_unsupported);
      return Backend::kFused;
    }
    case Backend::kAuto:
      // The tensor-core fused kernels beat alternating wherever they run (H200,
      // B=16, T=1024: 2-14x forward, 1.8-12x forward+backward, docs/kernels.md);
      // the FMA fused kernels only on the smallest float32 heads (fused_backend.h).
      if (fused::auto_picks(cell, in)) return Backend::kFused;
      if (alternating_unsupported.empty()) {
        if (in.wx.scalar_type() != at::kFloat) {
          TORCH_WARN_ONCE("flashrnn: backend=auto runs the alternating backend: the fused "
                          "tensor-core kernels do not take head dimension ", in.wx.size(4),
                          ": ", fused::tensor_core_reason(cell, in));
        }
        return Backend::kAlternating;
      }
      if (in.wx.is_cuda()) {
        TORCH_WARN_ONCE("flashrnn: backend=auto runs the vanilla backend because ",
                        alternating_unsupported);
      }
      return Backend::kVanilla;
  }
  return Backend::kVanilla;
}

Result flashrnn(const at::Tensor& Wx, const at::Tensor& R, const at::Tensor& b,
                const std::optional<at::Tensor>& initial_states, const Options& options) {
  validate_inputs(Wx, R, b, initial_states, options);
  const Backend backend = resolve_backend(options.backend, options.cell, Inputs{Wx, R, b, {}, {}});
  // Whether autograd will record this call (inside apply() grad mode is off).
  const bool keep_for_backward =
      at::GradMode::is_enabled() &&
      (Wx.requires_grad() || R.requires_grad() || b.requires_grad() ||
       (initial_states && initial_states->requires_grad()));
  const variable_list outputs = FlashRnnFunction::apply(
      Wx, R, b, initial_states, options.reset_mask, static_cast<int64_t>(backend),
      static_cast<int64_t>(options.cell), options.gradient_recurrent_cut,
      options.gradient_recurrent_clip, options.forward_clip, keep_for_backward, options.recompute,
      options.output_h_only);
  return {outputs[0], outputs[1]};
}

}  // namespace flashrnn

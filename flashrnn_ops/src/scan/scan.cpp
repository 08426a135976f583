// The scan op's public entry: names, backend choice and the autograd function.
#include "flashrnn/scan.h"

#include <string>

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include "scan/scan_backends.h"
#include "scan/scan_validate.h"

namespace flashrnn {

std::string_view to_string(ScanLayout layout) {
  switch (layout) {
    case ScanLayout::kBDT: return "bdt";
    case ScanLayout::kBTD: return "btd";
  }
  return "?";
}

std::string_view to_string(ScanBackend backend) {
  switch (backend) {
    case ScanBackend::kVanilla: return "vanilla";
    case ScanBackend::kCuda: return "cuda";
    case ScanBackend::kAuto: return "auto";
  }
  return "?";
}

ScanLayout parse_scan_layout(std::string_view name) {
  for (ScanLayout l : {ScanLayout::kBDT, ScanLayout::kBTD})
    if (to_string(l) == name) return l;
  throw InputError("flashrnn scan: unknown layout '" + std::string(name) +
                   "'; choose bdt ([B, D, T]) or btd ([B, T, D])");
}

ScanBackend parse_scan_backend(std::string_view name) {
  for (ScanBackend b : {ScanBackend::kVanilla, ScanBackend::kCuda, ScanBackend::kAuto})
    if (to_string(b) == name) return b;
  throw InputError("flashrnn scan: unknown backend '" + std::string(name) +
                   "'; choose one of vanilla, cuda, auto");
}

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The backend that runs a case: cuda takes CUDA tensors of 16- and 32-bit floats.
ScanBackend resolve_backend(ScanBackend requested, const at::Tensor& a) {
  const bool cuda_fits = a.is_cuda() && a.scalar_type() != at::kDouble;
  switch (requested) {
    case ScanBackend::kVanilla: return ScanBackend::kVanilla;
    case ScanBackend::kAuto: return cuda_fits ? ScanBackend::kCuda : ScanBackend::kVanilla;
    case ScanBackend::kCuda:
      if (!a.is_cuda())
        throw InputError("flashrnn scan: backend=cuda needs CUDA tensors, but a is on " +
                         a.device().str() + "; use backend=vanilla or auto");
      if (!cuda_fits)
        throw InputError(
            "flashrnn scan: backend=cuda stores float32, bfloat16 or float16, but a is float64; "
            "use backend=vanilla or auto");
      return ScanBackend::kCuda;
  }
  return ScanBackend::kVanilla;
}

class ScanFunction : public torch::autograd::Function<ScanFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& a, const at::Tensor& b,
                               const std::optional<at::Tensor>& x0, int64_t layout, bool reverse,
                               int64_t backend) {
    const scan_backends::Problem problem{static_cast<ScanLayout>(layout), reverse};
    const at::Tensor x0_or_none = x0 ? *x0 : at::Tensor();
    const scan_backends::Forward out =
        static_cast<ScanBackend>(backend) == ScanBackend::kCuda
            ? scan_backends::cuda_forward(problem, a, b, x0_or_none)
            : scan_backends::vanilla_forward(problem, a, b, x0_or_none);
    // The backward needs a, x and x0; b is not needed.
    ctx->save_for_backward({a, out.x, x0_or_none});
    ctx->saved_data["layout"] = layout;
    ctx->saved_data["reverse"] = reverse;
    ctx->saved_data["backend"] = backend;
    // Unused outputs get no zero-filled gradient tensors.
    ctx->set_materialize_grads(false);
    return {out.x, out.last};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const scan_backends::Problem problem{
        static_cast<ScanLayout>(ctx->saved_data["layout"].toInt()),
        ctx->saved_data["reverse"].toBool()};
    const bool cuda = static_cast<ScanBackend>(ctx->saved_data["backend"].toInt()) ==
                      ScanBackend::kCuda;
    const scan_backends::Gradients g =
        cuda ? scan_backends::cuda_backward(problem, saved[0], saved[1], saved[2], grads[0],
                                            grads[1])
             : scan_backends::vanilla_backward(problem, saved[0], saved[1], saved[2], grads[0],
                                               grads[1]);
    return {g.da, g.db, g.dx0, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

ScanResult scan(const at::Tensor& a, const at::Tensor& b, const ScanOptions& options) {
  validate_scan_inputs(a, b, options);
  const ScanBackend backend = resolve_backend(options.backend, a);
  const variable_list out =
      ScanFunction::apply(a, b, options.x0, static_cast<int64_t>(options.layout), options.reverse,
                          static_cast<int64_t>(backend));
  return {out[0], out[1]};
}

}  // namespace flashrnn

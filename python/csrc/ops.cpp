// The Python extension's torch ops: the recurrent op and the scan as separate
// forward and backward operators in the `flashtrain` namespace. Autograd and
// the fake (meta) kernels are registered from Python (flashtrain/_ops.py), so
// torch.compile traces the pair like any aten op and CUDA graphs capture the
// kernels the backends launch. The kernels are flashrnn_ops' own: this file
// only unpacks arguments, keeps what a forward leaves for its backward as
// outputs, and maps flashrnn::InputError to Python's ValueError / TypeError.
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <ATen/ATen.h>
#include <torch/library.h>
#include <torch/version.h>

#include "backend_choice.h"
#include "cells/registry.h"
#include "flashrnn/flashrnn.h"
#include "flashrnn/scan.h"
#include "flashtrain/trainer/checkpoint/checksum.h"
#ifdef FLASHTRAIN_WITH_TOKENIZER
#include "flashtrain/data/tokenizer.h"
#include "flashtrain/models/block_kind.h"
#include "flashtrain/models/option_defaults.h"
#endif
#include "recurrence.h"
#include "scan/scan_backends.h"
#include "scan/scan_validate.h"
#include "validate.h"

namespace {

using flashrnn::Backend;
using flashrnn::Cell;
using at::Tensor;

// InputError (std::invalid_argument) would reach Python as RuntimeError; c10's
// ValueError and TypeError reach it as ValueError and TypeError.
template <class F>
auto mapping_input_errors(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const flashrnn::InputError& e) {
    const std::string what = e.what();
    if (what.find("dtype") != std::string::npos) TORCH_CHECK_TYPE(false, what);
    TORCH_CHECK_VALUE(false, what);
  }
}

// An operator's outputs may alias neither its inputs nor each other: a view
// the backend returned (a permute that happened to be contiguous) is copied.
// Outputs are contiguous, as the fake kernels (flashtrain/_ops.py) say.
Tensor fresh(const Tensor& t, std::initializer_list<const Tensor*> others = {}) {
  for (const Tensor* o : others)
    if (o->defined() && t.defined() && t.is_alias_of(*o)) return t.clone(at::MemoryFormat::Contiguous);
  return t.contiguous();
}

at::ScalarType storage_type(Backend backend, at::ScalarType wx) {
  return backend == Backend::kVanilla ? flashrnn::compute_type(wx) : wx;
}

// The backend the op runs. CPU tensors always take the vanilla backend.
Backend choose(const std::string& requested, Cell cell, const flashrnn::Inputs& in) {
  if (!in.wx.is_cuda()) return Backend::kVanilla;
  return flashrnn::resolve_backend(flashrnn::parse_backend(requested), cell, in);
}

using ForwardOut = std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor>;

ForwardOut flashrnn_forward(const Tensor& wx, const Tensor& r, const Tensor& b,
                            const std::optional<Tensor>& initial_states,
                            const std::optional<Tensor>& reset_mask, const std::string& cell_name,
                            const std::string& backend_name, bool gradient_recurrent_cut,
                            double gradient_recurrent_clip, double forward_clip,
                            bool keep_for_backward) {
  return mapping_input_errors([&]() -> ForwardOut {
    flashrnn::Options options;
    options.cell = flashrnn::parse_cell(cell_name);
    options.gradient_recurrent_cut = gradient_recurrent_cut;
    options.gradient_recurrent_clip = gradient_recurrent_clip;
    options.forward_clip = forward_clip;
    options.reset_mask = reset_mask;
    flashrnn::validate_inputs(wx, r, b, initial_states, options);
    const flashrnn::Inputs in{wx, r, b, initial_states.value_or(Tensor()),
                              reset_mask ? reset_mask->contiguous() : Tensor()};
    const Backend backend = choose(backend_name, options.cell, in);
    const flashrnn::Problem problem{options.cell, gradient_recurrent_cut, gradient_recurrent_clip,
                                    forward_clip, keep_for_backward};
    const flashrnn::ForwardResult result = flashrnn::forward_on(backend, problem, in);
    const flashrnn::Saved& s = result.saved;
    Tensor states_all = fresh(result.states_all, {&s.states});
    Tensor last = result.last_states;  // (a tensor of its own on every backend)
    if (!keep_for_backward) {  // nothing kept: empty placeholders of the same dtypes
      const auto none = [&](at::ScalarType t) { return at::empty({0}, wx.options().dtype(t)); };
      const at::ScalarType st = storage_type(backend, wx.scalar_type());
      const at::ScalarType ct = flashrnn::compute_type(wx.scalar_type());
      return {states_all, last, none(st), none(ct), none(ct), none(ct), none(st)};
    }
    const Tensor initial = in.initial_states;
    return {states_all,
            last,
            fresh(s.r_heads, {&r}),
            fresh(s.s0, {&initial}),
            fresh(s.states),
            fresh(s.cache),
            fresh(s.h_gemm, {&s.states, &s.cache})};
  });
}

using BackwardOut = std::tuple<Tensor, Tensor, Tensor, Tensor>;

BackwardOut flashrnn_backward(const std::optional<Tensor>& d_states_all,
                              const std::optional<Tensor>& d_last_states, const Tensor& r_heads,
                              const Tensor& s0, const std::optional<Tensor>& reset_mask,
                              const Tensor& states, const Tensor& cache, const Tensor& h_gemm,
                              at::ScalarType wx_type, at::ScalarType r_type, at::ScalarType b_type,
                              int64_t biases, const std::string& cell_name,
                              const std::string& backend_name, bool gradient_recurrent_cut,
                              double gradient_recurrent_clip, double forward_clip,
                              at::ScalarType initial_type) {
  return mapping_input_errors([&]() -> BackwardOut {
    const Cell cell = flashrnn::parse_cell(cell_name);
    const int64_t steps = states.size(0), B = states.size(1), N = states.size(3),
                  D = states.size(4);
    const int64_t G = r_heads.size(1) / D;
    // The forward's backend choice again, then the backward's: they read only
    // sizes, dtype and device.
    const Tensor wx_like = at::empty({1}, states.options().dtype(wx_type)).expand({B, steps, G, N, D});
    const flashrnn::Inputs like{wx_like, {}, {}, {}, {}};
    const Backend backend = flashrnn::backward_backend(choose(backend_name, cell, like), cell, like);
    const flashrnn::Problem problem{cell, gradient_recurrent_cut, gradient_recurrent_clip,
                                    forward_clip, true};
    flashrnn::Saved saved;
    saved.r_heads = r_heads;
    saved.s0 = s0;
    saved.reset = reset_mask ? reset_mask->contiguous() : Tensor();
    saved.states = states;
    saved.cache = cache;
    saved.h_gemm = h_gemm;
    saved.wx_type = wx_type;
    saved.r_type = r_type;
    saved.b_type = b_type;
    saved.biases = biases;
    const flashrnn::OutputGradients grads{d_states_all.value_or(Tensor()),
                                          d_last_states.value_or(Tensor())};
    const flashrnn::Gradients g = flashrnn::backward_on(backend, problem, saved, grads);
    // [B, S, N, D] -> [S, B, 1, N, D]
    Tensor d_initial = g.d_s0.permute({1, 0, 2, 3}).unsqueeze(2).to(initial_type).contiguous();
    return {fresh(g.d_wx), fresh(g.d_r), fresh(g.d_b), d_initial};
  });
}

std::vector<int64_t> cell_layout(const std::string& cell_name) {
  return mapping_input_errors([&] {
    const Cell cell = flashrnn::parse_cell(cell_name);
    const flashrnn::CellLayout l = flashrnn::cell_layout(cell);
    return std::vector<int64_t>{l.gates, l.biases, l.states, flashrnn::cache_slots(cell),
                                flashrnn::saved_states(cell).count};
  });
}

// The models' initialisation defaults (models/option_defaults.h), as JSON for
// flashtrain.modules: the Python blocks start as the trainer's do, from the
// one place those numbers are written.
std::string model_defaults() {
  namespace d = flashtrain::models::defaults;
  std::ostringstream out;
  out.precision(17);
  out << "{\"retain_bias_min\": " << d::kRetainBiasMin << ", \"retain_bias_max\": " << d::kRetainBiasMax
      << ", \"recurrent_init_scale\": " << d::kRecurrentInitScale << ", \"conv_kernel\": " << d::kConvKernel
      << ", \"rope_theta\": " << d::kRopeTheta << ", \"norm_eps\": " << d::kNormEps
      << ", \"ffn_factor\": " << d::kFfnFactor << ", \"ffn_multiple_of\": " << d::kFfnMultipleOf
      << ", \"slstm_forget_bias_min\": " << d::kSlstmForgetBiasMin
      << ", \"slstm_forget_bias_max\": " << d::kSlstmForgetBiasMax
      << ", \"slstm_recurrent_init_scale\": " << d::kSlstmRecurrentInitScale
      << ", \"scan_min_timescale\": " << d::kScanMinTimescale
      << ", \"scan_max_timescale\": " << d::kScanMaxTimescale << "}";
  return out.str();
}

// The models' block kinds (models/block_kind.h), as JSON for flashtrain.modules:
// [{"name", "cell" ("" when not recurrent), "heads", "plain"}, ...] in the table's order.
std::string block_kinds() {
  std::ostringstream out;
  out << "[";
  for (const flashtrain::models::BlockKindInfo& row : flashtrain::models::kBlockKinds) {
    out << (out.tellp() > 1 ? ", " : "") << "{\"name\": \"" << row.name << "\", \"cell\": \"" << row.cell
        << "\", \"heads\": " << (row.heads ? "true" : "false") << ", \"plain\": " << (row.plain ? "true" : "false")
        << "}";
  }
  out << "]";
  return out.str();
}

// ---- scan -----------------------------------------------------------------

flashrnn::ScanBackend choose_scan(const std::string& requested, const Tensor& a) {
  const flashrnn::ScanBackend b = flashrnn::parse_scan_backend(requested);
  if (b == flashrnn::ScanBackend::kAuto)
    return a.is_cuda() && a.scalar_type() != at::kDouble ? flashrnn::ScanBackend::kCuda
                                                         : flashrnn::ScanBackend::kVanilla;
  return b;
}

std::tuple<Tensor, Tensor> scan_forward(const Tensor& a, const Tensor& b,
                                        const std::optional<Tensor>& x0, const std::string& layout,
                                        bool reverse, const std::string& backend_name) {
  return mapping_input_errors([&]() -> std::tuple<Tensor, Tensor> {
    flashrnn::ScanOptions options;
    options.layout = flashrnn::parse_scan_layout(layout);
    options.x0 = x0;
    options.reverse = reverse;
    options.backend = flashrnn::parse_scan_backend(backend_name);
    flashrnn::validate_scan_inputs(a, b, options);
    const flashrnn::ScanBackend backend = choose_scan(backend_name, a);
    if (backend == flashrnn::ScanBackend::kCuda && !a.is_cuda())
      throw flashrnn::InputError("flashrnn scan: backend=cuda needs CUDA tensors, but a is on " +
                                 a.device().str() + "; use backend=vanilla or auto");
    if (backend == flashrnn::ScanBackend::kCuda && a.scalar_type() == at::kDouble)
      throw flashrnn::InputError(
          "flashrnn scan: backend=cuda stores float32, bfloat16 or float16, but a is float64; "
          "use backend=vanilla or auto");
    const flashrnn::scan_backends::Problem problem{options.layout, reverse};
    const Tensor x0_or_none = x0.value_or(Tensor());
    const flashrnn::scan_backends::Forward out =
        backend == flashrnn::ScanBackend::kCuda
            ? flashrnn::scan_backends::cuda_forward(problem, a, b, x0_or_none)
            : flashrnn::scan_backends::vanilla_forward(problem, a, b, x0_or_none);
    const Tensor x = fresh(out.x, {&a, &b, &x0_or_none});
    return {x, fresh(out.last, {&a, &b, &x0_or_none, &x})};
  });
}

std::tuple<Tensor, Tensor, Tensor> scan_backward(const Tensor& a, const Tensor& x,
                                                 const std::optional<Tensor>& x0,
                                                 const std::optional<Tensor>& dx,
                                                 const std::optional<Tensor>& dlast,
                                                 const std::string& layout, bool reverse,
                                                 const std::string& backend_name) {
  return mapping_input_errors([&]() -> std::tuple<Tensor, Tensor, Tensor> {
    const flashrnn::scan_backends::Problem problem{flashrnn::parse_scan_layout(layout), reverse};
    const Tensor x0_or_none = x0.value_or(Tensor());
    const bool cuda = choose_scan(backend_name, a) == flashrnn::ScanBackend::kCuda;
    const auto g = cuda ? flashrnn::scan_backends::cuda_backward(problem, a, x, x0_or_none,
                                                                 dx.value_or(Tensor()),
                                                                 dlast.value_or(Tensor()))
                        : flashrnn::scan_backends::vanilla_backward(problem, a, x, x0_or_none,
                                                                    dx.value_or(Tensor()),
                                                                    dlast.value_or(Tensor()));
    const Tensor da = g.da.defined() ? g.da : at::zeros_like(a);
    const Tensor db = g.db.defined() ? g.db : at::zeros_like(a);
    const Tensor dx0 = g.dx0.defined() ? g.dx0 : at::empty({0}, a.options());
    return {fresh(da), fresh(db), fresh(dx0)};
  });
}

// The torch this library was compiled against; the package compares it with
// the torch it is imported into.
std::string torch_version() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

// The checksum a manifest.json records for a file (FNV-1a, 64 bit, as 16 hex
// digits): the trainer's own code (trainer/src/checkpoint/checksum.cpp) is compiled into
// this library, so load_export checks an export exactly as the trainer does.
std::string checksum_of_file(const std::string& path) {
  return flashtrain::trainer::fnv1a64_of_file(path);
}

#ifdef FLASHTRAIN_WITH_TOKENIZER
// The SentencePiece model at `path`, loaded once (a run's tokenizer.model).
const flashtrain::data::Tokenizer& tokenizer_at(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<flashtrain::data::Tokenizer>> loaded;
  const std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<flashtrain::data::Tokenizer>& tokenizer = loaded[path];
  if (!tokenizer) tokenizer = std::make_unique<flashtrain::data::Tokenizer>(path);
  return *tokenizer;
}

std::vector<std::int64_t> tokenize(const std::string& path, const std::string& text) {
  const std::vector<std::int32_t> ids = tokenizer_at(path).encode(text);
  return {ids.begin(), ids.end()};
}

std::string detokenize(const std::string& path, const std::vector<std::int64_t>& ids) {
  const flashtrain::data::Tokenizer& tokenizer = tokenizer_at(path);
  std::vector<std::int32_t> narrow;
  narrow.reserve(ids.size());
  for (const std::int64_t id : ids) {
    TORCH_CHECK_VALUE(id >= 0 && id < tokenizer.vocab_size(), "detokenize: id ", id, " is outside the vocabulary (",
                      tokenizer.vocab_size(), " pieces) of ", path);
    narrow.push_back(static_cast<std::int32_t>(id));
  }
  return tokenizer.decode(narrow);
}

// [vocabulary size, pad, unk, bos, eos, newline] of the model at `path`.
std::vector<std::int64_t> tokenizer_ids(const std::string& path) {
  const flashtrain::data::Tokenizer& t = tokenizer_at(path);
  return {t.vocab_size(), t.pad_id(), t.unk_id(), t.bos_id(), t.eos_id(), t.newline_id()};
}
#endif

}  // namespace

TORCH_LIBRARY(flashtrain, m) {
  m.def("torch_version() -> str", &torch_version);
  m.def("fnv1a64_of_file(str path) -> str", &checksum_of_file);
#ifdef FLASHTRAIN_WITH_TOKENIZER
  m.def("tokenize(str model, str text) -> int[]", &tokenize);
  m.def("detokenize(str model, int[] ids) -> str", &detokenize);
  m.def("tokenizer_ids(str model) -> int[]", &tokenizer_ids);
#endif
  m.def(
      "flashrnn_forward(Tensor Wx, Tensor R, Tensor b, Tensor? initial_states, "
      "Tensor? reset_mask, str cell, str backend, bool gradient_recurrent_cut, "
      "float gradient_recurrent_clip, float forward_clip, bool keep_for_backward) -> "
      "(Tensor states_all, Tensor last_states, Tensor r_heads, Tensor s0, Tensor states, "
      "Tensor cache, Tensor h_gemm)");
  m.def(
      "flashrnn_backward(Tensor? d_states_all, Tensor? d_last_states, Tensor r_heads, Tensor s0, "
      "Tensor? reset_mask, Tensor states, Tensor cache, Tensor h_gemm, ScalarType wx_type, "
      "ScalarType r_type, ScalarType b_type, int biases, str cell, str backend, "
      "bool gradient_recurrent_cut, float gradient_recurrent_clip, float forward_clip, "
      "ScalarType initial_type) -> (Tensor d_Wx, Tensor d_R, Tensor d_b, Tensor d_initial_states)");
  m.def("cell_layout(str cell) -> int[]", &cell_layout);
  m.def("model_defaults() -> str", &model_defaults);
  m.def("block_kinds() -> str", &block_kinds);
  m.def(
      "scan_forward(Tensor a, Tensor b, Tensor? x0, str layout, bool reverse, str backend) -> "
      "(Tensor x, Tensor last)");
  m.def(
      "scan_backward(Tensor a, Tensor x, Tensor? x0, Tensor? dx, Tensor? dlast, str layout, "
      "bool reverse, str backend) -> (Tensor da, Tensor db, Tensor dx0)");
}

TORCH_LIBRARY_IMPL(flashtrain, CPU, m) {
  m.impl("flashrnn_forward", &flashrnn_forward);
  m.impl("flashrnn_backward", &flashrnn_backward);
  m.impl("scan_forward", &scan_forward);
  m.impl("scan_backward", &scan_backward);
}

TORCH_LIBRARY_IMPL(flashtrain, CUDA, m) {
  m.impl("flashrnn_forward", &flashrnn_forward);
  m.impl("flashrnn_backward", &flashrnn_backward);
  m.impl("scan_forward", &scan_forward);
  m.impl("scan_backward", &scan_backward);
}

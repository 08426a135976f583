// scan: the first-order linear recurrence of linear RNNs and state-space models,
//
//   x[t] = a[t] · x[t−1] + b[t],   x[−1] = x0 (zeros when not given),
//
// independently for every batch row and channel, as a torch autograd op.
//
//   flashrnn::ScanOptions options;
//   options.layout = flashrnn::ScanLayout::kBTD;
//   auto [x, last] = flashrnn::scan(a, b, options);
//
//   a, b  [B, D, T] (layout kBDT, time innermost) or [B, T, D] (kBTD, channels
//         innermost: what models hold; no transposes are made)
//   x0    [B, D] or unset
//   -> x    like a: every step's state
//      last [B, D]: the state after the final step (x at the last step)
//
// reverse = true runs the recurrence from the end: x[t] = a[t] · x[t+1] + b[t],
// x[T] = x0, and last is x[0].
//
// Storage is float32, bfloat16 or float16 (float64 on the vanilla backend); the
// state and every product are accumulated in float32 (float64 for float64).
// Gradients flow to a, b and x0.
#pragma once

#include <optional>
#include <string_view>

#include <ATen/Tensor.h>

#include "flashrnn/flashrnn.h"  // InputError

namespace flashrnn {

enum class ScanLayout { kBDT, kBTD };

// vanilla: libtorch ops (a doubling scan), CPU and CUDA, the reference.
// cuda: one forward kernel and one fused backward kernel (CUDA; not float64).
// auto: cuda where it applies, vanilla otherwise.
enum class ScanBackend { kVanilla, kCuda, kAuto };

std::string_view to_string(ScanLayout layout);
std::string_view to_string(ScanBackend backend);
// Parse "bdt" / "btd"; throws InputError listing the choices.
ScanLayout parse_scan_layout(std::string_view name);
// Parse "vanilla" / "cuda" / "auto".
ScanBackend parse_scan_backend(std::string_view name);

struct ScanOptions {
  ScanLayout layout = ScanLayout::kBDT;
  std::optional<at::Tensor> x0;  // [B, D], the state before the first step
  bool reverse = false;
  ScanBackend backend = ScanBackend::kAuto;
};

struct ScanResult {
  at::Tensor x;     // like a
  at::Tensor last;  // [B, D]
};

// Malformed input throws InputError naming the tensor, its shape and the expected one.
ScanResult scan(const at::Tensor& a, const at::Tensor& b, const ScanOptions& options = {});

}  // namespace flashrnn

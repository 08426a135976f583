#include "scan/scan_validate.h"

#include <sstream>
#include <string>

#include <ATen/ATen.h>

#include "shape_text.h"

namespace flashrnn {
namespace {

template <class... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  std::ostringstream s;
  s << "flashrnn scan: ";
  (s << ... << parts);
  throw InputError(s.str());
}

const char* layout_text(ScanLayout layout) {
  return layout == ScanLayout::kBDT ? "[B, D, T]" : "[B, T, D]";
}

void check_like_a(const at::Tensor& t, const char* name, const at::Tensor& a) {
  if (t.device() != a.device())
    fail(name, " is on ", t.device().str(), " but a is on ", a.device().str(),
         "; all tensors must be on one device");
  if (t.scalar_type() != a.scalar_type())
    fail(name, " has dtype ", t.scalar_type(), " but a has dtype ", a.scalar_type(),
         "; all tensors must have one dtype");
}

}  // namespace

void validate_scan_inputs(const at::Tensor& a, const at::Tensor& b, const ScanOptions& options) {
  const char* layout = layout_text(options.layout);
  if (!a.defined()) fail("a is an undefined tensor");
  if (!b.defined()) fail("b is an undefined tensor");
  const auto type = a.scalar_type();
  if (type != at::kFloat && type != at::kDouble && type != at::kHalf && type != at::kBFloat16)
    fail("a has dtype ", type, "; supported are float32, float64, float16 and bfloat16");
  if (!a.device().is_cpu() && !a.device().is_cuda())
    fail("a is on ", a.device().str(), "; scan runs on cpu and cuda devices");
  if (a.dim() != 3)
    fail("a must have 3 dimensions ", layout, ", got shape ", shape_of(a.sizes()));
  for (int64_t i = 0; i < 3; ++i)
    if (a.size(i) == 0)
      fail("a has shape ", shape_of(a.sizes()), " ", layout, ": B, D and T must be at least 1");

  check_like_a(b, "b", a);
  if (b.sizes() != a.sizes())
    fail("b has shape ", shape_of(b.sizes()), " but expected ", shape_of(a.sizes()), " ", layout,
         ": the shape of a");

  if (options.x0) {
    const at::Tensor& x0 = *options.x0;
    if (!x0.defined()) fail("x0 is an undefined tensor; leave it unset for zeros");
    check_like_a(x0, "x0", a);
    const int64_t batch = a.size(0);
    const int64_t channels = a.size(options.layout == ScanLayout::kBDT ? 1 : 2);
    if (x0.dim() != 2 || x0.size(0) != batch || x0.size(1) != channels)
      fail("x0 has shape ", shape_of(x0.sizes()), " but expected [B, D] = ",
           shape_of({batch, channels}), " for a of shape ", shape_of(a.sizes()), " ", layout);
  }
}

}  // namespace flashrnn

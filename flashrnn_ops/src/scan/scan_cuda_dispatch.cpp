// The cuda scan backend's ATen side: makes inputs dense, allocates outputs and
// the look-back workspace, fills the params structs and launches on the current
// stream. No host synchronisation.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/core/DeviceGuard.h>

#include "scan/scan_backends.h"
#include "scan/scan_launch.h"

namespace flashrnn::scan_backends {
namespace {

using scan_kernels::ScanDtype;
using scan_kernels::ScanShape;

ScanDtype dtype_of(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat: return ScanDtype::kFloat32;
    case at::kBFloat16: return ScanDtype::kBFloat16;
    case at::kHalf: return ScanDtype::kFloat16;
    default: TORCH_INTERNAL_ASSERT(false, "scan cuda backend: unsupported dtype ", t.scalar_type());
  }
}

ScanShape shape_of(const Problem& p, const at::Tensor& a) {
  const bool btd = p.layout == ScanLayout::kBTD;
  ScanShape s;
  s.batch = a.size(0);
  s.channels = a.size(btd ? 2 : 1);
  s.steps = a.size(btd ? 1 : 2);
  s.btd = btd;
  s.reverse = p.reverse;
  s.dtype = dtype_of(a);
  return s;
}

at::Tensor dense(const at::Tensor& t) { return t.defined() ? t.contiguous() : t; }
const void* data_or_null(const at::Tensor& t) { return t.defined() ? t.const_data_ptr() : nullptr; }

// The kernels' scratch memory from the caching allocator (stream-ordered reuse).
at::Tensor workspace_for(const ScanShape& shape, const at::Tensor& like) {
  const size_t bytes = scan_kernels::scan_workspace_bytes(shape);
  return bytes ? at::empty({int64_t(bytes)}, like.options().dtype(at::kByte)) : at::Tensor();
}

void check_launch(cudaError_t status, const char* what) {
  TORCH_CHECK(status == cudaSuccess, "flashrnn scan: ", what, " failed: ",
              cudaGetErrorString(status));
}

}  // namespace

Forward cuda_forward(const Problem& p, const at::Tensor& a, const at::Tensor& b,
                     const at::Tensor& x0) {
  const c10::DeviceGuard guard(a.device());
  const at::Tensor a_d = dense(a), b_d = dense(b), x0_d = dense(x0);
  scan_kernels::ScanForwardParams params;
  params.shape = shape_of(p, a_d);
  Forward out;
  out.x = at::empty(a_d.sizes(), a_d.options());
  out.last = at::empty({params.shape.batch, params.shape.channels}, a_d.options());
  params.a = a_d.const_data_ptr();
  params.b = b_d.const_data_ptr();
  params.x0 = data_or_null(x0_d);
  params.x = out.x.data_ptr();
  params.last = out.last.data_ptr();
  at::Tensor workspace = workspace_for(params.shape, a_d);
  check_launch(scan_kernels::launch_scan_forward(
                   params, workspace.defined() ? workspace.data_ptr() : nullptr,
                   at::cuda::getCurrentCUDAStream()),
               "forward kernel");
  return out;
}

Gradients cuda_backward(const Problem& p, const at::Tensor& a, const at::Tensor& x,
                        const at::Tensor& x0, const at::Tensor& dx, const at::Tensor& dlast) {
  const c10::DeviceGuard guard(a.device());
  const at::Tensor a_d = dense(a), x_d = dense(x), x0_d = dense(x0);
  const at::Tensor dx_d = dense(dx.defined() ? dx.to(a.scalar_type()) : dx);
  const at::Tensor dlast_d = dense(dlast.defined() ? dlast.to(a.scalar_type()) : dlast);
  scan_kernels::ScanBackwardParams params;
  params.shape = shape_of(p, a_d);
  Gradients out;
  out.da = at::empty(a_d.sizes(), a_d.options());
  out.db = at::empty(a_d.sizes(), a_d.options());
  if (x0_d.defined()) out.dx0 = at::empty(x0_d.sizes(), x0_d.options());
  params.a = a_d.const_data_ptr();
  params.x = x_d.const_data_ptr();
  params.x0 = data_or_null(x0_d);
  params.dx = data_or_null(dx_d);
  params.dlast = data_or_null(dlast_d);
  params.da = out.da.data_ptr();
  params.db = out.db.data_ptr();
  params.dx0 = out.dx0.defined() ? out.dx0.data_ptr() : nullptr;
  at::Tensor workspace = workspace_for(params.shape, a_d);
  check_launch(scan_kernels::launch_scan_backward(
                   params, workspace.defined() ? workspace.data_ptr() : nullptr,
                   at::cuda::getCurrentCUDAStream()),
               "backward kernel");
  return out;
}

}  // namespace flashrnn::scan_backends

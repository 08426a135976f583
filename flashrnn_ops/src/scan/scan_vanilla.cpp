// The vanilla scan backend: libtorch ops on any device, the reference.
//
// The recurrence runs as a doubling (Hillis–Steele) scan over affine maps: after
// the round with shift s, element t holds the map of the 2s steps ending at t,
// so ⌈log2 T⌉ rounds of whole-tensor ops finish it. No logarithms and no
// division by cumulative products: any real gates, including zero and negative.
#include <ATen/ATen.h>

#include "scan/scan_backends.h"

namespace flashrnn::scan_backends {
namespace {

int64_t time_dim(const Problem& p) { return p.layout == ScanLayout::kBDT ? 2 : 1; }

// Float inputs of every width compute in float32; float64 stays float64.
at::ScalarType compute_type(const at::Tensor& t) {
  return t.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
}

at::Tensor compute_copy(const at::Tensor& t) {
  return t.to(compute_type(t), /*non_blocking=*/false, /*copy=*/true);
}

// In place: values[t] ← gates[t]·values[t∓1] + values[t] along `dim`, ascending
// (t−1) or descending (t+1). Consumes `gates`.
void doubling_scan_(at::Tensor& gates, at::Tensor& values, int64_t dim, bool descending) {
  const int64_t steps = values.size(dim);
  for (int64_t shift = 1; shift < steps; shift *= 2) {
    const int64_t n = steps - shift;
    const int64_t target = descending ? 0 : shift, source = descending ? shift : 0;
    const at::Tensor target_gates = gates.narrow(dim, target, n);
    const at::Tensor source_gates = gates.narrow(dim, source, n);
    at::Tensor target_values = values.narrow(dim, target, n);
    // Out of place first: targets and sources overlap.
    const at::Tensor new_values =
        at::addcmul(target_values, target_gates, values.narrow(dim, source, n));
    if (2 * shift < steps) {
      const at::Tensor new_gates = target_gates * source_gates;
      gates.narrow(dim, target, n).copy_(new_gates);
    }
    target_values.copy_(new_values);
  }
}

// Index along time of the forward's first and final steps.
int64_t first_step(const Problem& p, int64_t steps) { return p.reverse ? steps - 1 : 0; }
int64_t final_step(const Problem& p, int64_t steps) { return p.reverse ? 0 : steps - 1; }

}  // namespace

Forward vanilla_forward(const Problem& p, const at::Tensor& a, const at::Tensor& b,
                        const at::Tensor& x0) {
  const int64_t dim = time_dim(p), steps = a.size(dim);
  at::Tensor gates = compute_copy(a);
  at::Tensor values = compute_copy(b);
  if (x0.defined()) {
    const int64_t t0 = first_step(p, steps);
    values.select(dim, t0).addcmul_(gates.select(dim, t0), x0.to(values.scalar_type()));
  }
  doubling_scan_(gates, values, dim, p.reverse);
  Forward out;
  out.x = values.to(a.scalar_type());
  out.last = out.x.select(dim, final_step(p, steps)).contiguous();
  return out;
}

// db is the scan of g in the opposite order whose gate at step t is the
// forward's next gate a[t±1]; da[t] = db[t]·x[t∓1] (x0 before the first step);
// dx0 = a[first]·db[first].
Gradients vanilla_backward(const Problem& p, const at::Tensor& a, const at::Tensor& x,
                           const at::Tensor& x0, const at::Tensor& dx, const at::Tensor& dlast) {
  const int64_t dim = time_dim(p), steps = a.size(dim);
  const at::ScalarType ct = compute_type(a);
  at::Tensor g = dx.defined() ? compute_copy(dx) : at::zeros(a.sizes(), a.options().dtype(ct));
  if (dlast.defined()) g.select(dim, final_step(p, steps)).add_(dlast.to(ct));

  // Steps `here` and `next` (the forward's next step) as slices of T−1 steps:
  // gate[here] = a[next] and x_prev[next] = x[here].
  const int64_t here = p.reverse ? 1 : 0, next = p.reverse ? 0 : 1;
  at::Tensor gates = at::zeros_like(g);
  gates.narrow(dim, here, steps - 1).copy_(a.narrow(dim, next, steps - 1));
  at::Tensor x_prev = at::zeros_like(g);
  x_prev.narrow(dim, next, steps - 1).copy_(x.narrow(dim, here, steps - 1));
  const int64_t t0 = first_step(p, steps);
  if (x0.defined()) x_prev.select(dim, t0).copy_(x0);

  doubling_scan_(gates, g, dim, /*descending=*/!p.reverse);
  Gradients out;
  out.db = g.to(a.scalar_type());
  out.da = (g * x_prev).to(a.scalar_type());
  if (x0.defined())
    out.dx0 = (a.select(dim, t0).to(ct) * g.select(dim, t0)).to(x0.scalar_type()).contiguous();
  return out;
}

}  // namespace flashrnn::scan_backends

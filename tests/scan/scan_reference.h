// Test-side references for the scan op, written from its definition and sharing
// no code with the library: plain float64 loops over every (batch, channel).
//
//   forward:  x[t] = a[t]·x[t−1] + b[t]   (x[−1] = x0; reverse runs from the end)
//   backward: db[t] = g[t] + a[t+1]·db[t+1],  da[t] = db[t]·x[t−1],  dx0 = a[0]·db[0]
//             with g = dL/dx plus dL/dlast at the final step.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <tuple>

#include <torch/torch.h>

#include "flashrnn/scan.h"

namespace flashrnn::scan_testing {

struct ScanCase {
  int64_t batch = 2, channels = 3, steps = 5;
  ScanLayout layout = ScanLayout::kBDT;
  bool reverse = false;
  bool with_x0 = true;
};

// Sequence-shaped sizes of a case in its layout.
inline std::vector<int64_t> sizes_of(const ScanCase& c) {
  return c.layout == ScanLayout::kBDT ? std::vector<int64_t>{c.batch, c.channels, c.steps}
                                      : std::vector<int64_t>{c.batch, c.steps, c.channels};
}

// A [B, D, T] double copy of a sequence tensor in either layout.
inline torch::Tensor as_bdt(const torch::Tensor& t, ScanLayout layout) {
  const torch::Tensor d = t.to(torch::kCPU, torch::kDouble);
  return (layout == ScanLayout::kBDT ? d : d.permute({0, 2, 1})).contiguous();
}

// Back from [B, D, T] to the case's layout.
inline torch::Tensor from_bdt(const torch::Tensor& t, ScanLayout layout) {
  return (layout == ScanLayout::kBDT ? t : t.permute({0, 2, 1})).contiguous();
}

struct Inputs {
  torch::Tensor a, b, x0;  // x0 undefined when the case has none
  ScanOptions options(const ScanCase& c, ScanBackend backend) const {
    ScanOptions o;
    o.layout = c.layout;
    o.reverse = c.reverse;
    o.backend = backend;
    if (x0.defined()) o.x0 = x0;
    return o;
  }
};

// Gates in [gate_lo, gate_hi], values in [−1, 1], x0 in [−1, 1], as float64 on
// the CPU; cast them to the dtype under test before use.
inline Inputs random_inputs(const ScanCase& c, double gate_lo = -1.0, double gate_hi = 1.0) {
  const auto o = torch::TensorOptions().dtype(torch::kDouble);
  Inputs in;
  in.a = gate_lo + (gate_hi - gate_lo) * torch::rand(sizes_of(c), o);
  in.b = 2 * torch::rand(sizes_of(c), o) - 1;
  if (c.with_x0) in.x0 = 2 * torch::rand({c.batch, c.channels}, o) - 1;
  return in;
}

struct ForwardRef {
  torch::Tensor x;     // the case's layout, double
  torch::Tensor last;  // [B, D]
};

inline ForwardRef reference_forward(const ScanCase& c, const torch::Tensor& a,
                                    const torch::Tensor& b, const torch::Tensor& x0) {
  const torch::Tensor A = as_bdt(a, c.layout), Bv = as_bdt(b, c.layout);
  torch::Tensor X = torch::empty_like(A);
  torch::Tensor last = torch::empty({c.batch, c.channels}, torch::kDouble);
  const torch::Tensor X0 = x0.defined() ? x0.to(torch::kCPU, torch::kDouble).contiguous()
                                        : torch::zeros({c.batch, c.channels}, torch::kDouble);
  const double *pa = A.data_ptr<double>(), *pb = Bv.data_ptr<double>();
  const double* px0 = X0.data_ptr<double>();
  double *px = X.data_ptr<double>(), *plast = last.data_ptr<double>();
  const int64_t T = c.steps;
  for (int64_t ch = 0; ch < c.batch * c.channels; ++ch) {
    double state = px0[ch];
    for (int64_t k = 0; k < T; ++k) {
      const int64_t t = c.reverse ? T - 1 - k : k, i = ch * T + t;
      state = pa[i] * state + pb[i];
      px[i] = state;
    }
    plast[ch] = state;
  }
  return {from_bdt(X, c.layout), last};
}

struct GradientsRef {
  torch::Tensor da, db, dx0;  // dx0 undefined without x0
};

// dx or dlast may be undefined (zero).
inline GradientsRef reference_backward(const ScanCase& c, const torch::Tensor& a,
                                       const torch::Tensor& x, const torch::Tensor& x0,
                                       const torch::Tensor& dx, const torch::Tensor& dlast) {
  const torch::Tensor A = as_bdt(a, c.layout), X = as_bdt(x, c.layout);
  const torch::Tensor G = dx.defined() ? as_bdt(dx, c.layout) : torch::zeros_like(A);
  const torch::Tensor GL = dlast.defined() ? dlast.to(torch::kCPU, torch::kDouble).contiguous()
                                           : torch::zeros({c.batch, c.channels}, torch::kDouble);
  const torch::Tensor X0 = x0.defined() ? x0.to(torch::kCPU, torch::kDouble).contiguous()
                                        : torch::zeros({c.batch, c.channels}, torch::kDouble);
  torch::Tensor dA = torch::empty_like(A), dB = torch::empty_like(A);
  torch::Tensor dX0 = torch::empty({c.batch, c.channels}, torch::kDouble);
  const double *pa = A.data_ptr<double>(), *px = X.data_ptr<double>(), *pg = G.data_ptr<double>();
  const double *pgl = GL.data_ptr<double>(), *px0 = X0.data_ptr<double>();
  double *pda = dA.data_ptr<double>(), *pdb = dB.data_ptr<double>(), *pdx0 = dX0.data_ptr<double>();
  const int64_t T = c.steps;
  // Forward step k (0 = first in the recurrence's order) at time index t(k).
  const auto time_of = [&](int64_t k) { return c.reverse ? T - 1 - k : k; };
  for (int64_t ch = 0; ch < c.batch * c.channels; ++ch) {
    double carry = 0;  // db of forward step k+1, times its gate
    for (int64_t k = T - 1; k >= 0; --k) {
      const int64_t i = ch * T + time_of(k);
      const double db = pg[i] + (k == T - 1 ? pgl[ch] : 0.0) + carry;
      const double x_prev = k == 0 ? px0[ch] : px[ch * T + time_of(k - 1)];
      pdb[i] = db;
      pda[i] = db * x_prev;
      carry = pa[i] * db;
    }
    pdx0[ch] = carry;
  }
  GradientsRef g{from_bdt(dA, c.layout), from_bdt(dB, c.layout), torch::Tensor()};
  if (x0.defined()) g.dx0 = dX0;
  return g;
}

// ‖out − ref‖ / ‖ref‖ in float64 on the CPU; NaN anywhere in out gives NaN.
inline double relative_error(const torch::Tensor& out, const torch::Tensor& ref) {
  const torch::Tensor o = out.to(torch::kCPU, torch::kDouble), r = ref.to(torch::kCPU, torch::kDouble);
  const double denom = r.norm().item<double>();
  return (o - r).norm().item<double>() / (denom > 0 ? denom : 1.0);
}

}  // namespace flashrnn::scan_testing

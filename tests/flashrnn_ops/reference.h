// Test-side references for the recurrent op, written from CELLS.md and sharing
// no code with the library:
//  - scalar_reference: a float64 scalar loop over (b, n, unit) and t;
//  - autograd_reference: the same equations as differentiable torch ops, with
//    the options expressed through autograd (detach, hooks), for gradients.
#pragma once

#include <cmath>
#include <optional>

#include <torch/torch.h>

#include "flashrnn/flashrnn.h"

namespace flashrnn::testing {

struct OpInputs {
  torch::Tensor wx, r, b;      // [B, T, Gx, N, D], [Gx, N, D, D], [Gb, N, D]
  torch::Tensor initial;       // [S, B, 1, N, D] or undefined
  Options options;

  std::optional<torch::Tensor> initial_opt() const {
    return initial.defined() ? std::optional<torch::Tensor>(initial) : std::nullopt;
  }
  Result run() const { return flashrnn::flashrnn(wx, r, b, initial_opt(), options); }
};

// Random inputs as the peers draw them: R scaled by 1/sqrt(D). sLSTM initial n
// is kept >= 1 (a state a real sequence can reach), the others are N(0, 1).
inline OpInputs random_inputs(Cell cell, int64_t B, int64_t T, int64_t N, int64_t D,
                              torch::Dtype dtype = torch::kDouble, bool with_initial = true,
                              torch::Device device = torch::kCPU) {
  const CellLayout l = cell_layout(cell);
  const auto o = torch::TensorOptions().dtype(torch::kDouble);
  OpInputs in;
  in.options.cell = cell;
  in.wx = torch::randn({B, T, l.gates, N, D}, o);
  in.r = torch::randn({l.gates, N, D, D}, o) / std::sqrt(double(D));
  in.b = torch::randn({l.biases, N, D}, o) * 0.5;
  if (with_initial) {
    in.initial = torch::randn({l.states, B, 1, N, D}, o);
    if (cell == Cell::kSlstm) in.initial[2] = 1.0 + in.initial[2].abs();
  }
  for (torch::Tensor* t : {&in.wx, &in.r, &in.b, &in.initial})
    if (t->defined()) *t = t->to(device, dtype);
  return in;
}

inline double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
inline double log_sigmoid(double x) { return -std::log1p(std::exp(-x)); }

// states_all [S, B, T, N, D] by a plain loop in double.
inline torch::Tensor scalar_reference(const OpInputs& in) {
  const CellLayout l = cell_layout(in.options.cell);
  const auto wx_t = in.wx.to(torch::kDouble).contiguous();
  const auto r_t = in.r.to(torch::kDouble).contiguous();
  const auto b_t = in.b.to(torch::kDouble).contiguous();
  const int64_t B = wx_t.size(0), T = wx_t.size(1), N = wx_t.size(3), D = wx_t.size(4);
  torch::Tensor s0 = in.initial.defined() ? in.initial.to(torch::kDouble)
                                          : torch::zeros({l.states, B, 1, N, D}, torch::kDouble);
  torch::Tensor reset = in.options.reset_mask ? in.options.reset_mask->cpu() : torch::Tensor();
  auto wx = wx_t.accessor<double, 5>();
  auto R = r_t.accessor<double, 4>();
  auto bias = b_t.accessor<double, 3>();
  auto init = s0.accessor<double, 5>();
  torch::Tensor out = torch::zeros({l.states, B, T, N, D}, torch::kDouble);
  auto o = out.accessor<double, 5>();
  const double clip = in.options.forward_clip;

  for (int64_t bb = 0; bb < B; ++bb) {
    for (int64_t n = 0; n < N; ++n) {
      std::vector<std::vector<double>> s(l.states, std::vector<double>(D));
      for (int64_t st = 0; st < l.states; ++st)
        for (int64_t d = 0; d < D; ++d) s[st][d] = init[st][bb][0][n][d];
      for (int64_t t = 0; t < T; ++t) {
        if (reset.defined() && reset[bb][t].item<bool>())
          for (int64_t st = 0; st < l.states; ++st)
            for (int64_t d = 0; d < D; ++d) s[st][d] = init[st][bb][0][n][d];
        std::vector<std::vector<double>> next = s;
        for (int64_t d = 0; d < D; ++d) {
          std::vector<double> x(l.gates), rh(l.gates, 0.0);
          for (int g = 0; g < l.gates; ++g) {
            x[g] = wx[bb][t][g][n][d];
            for (int64_t k = 0; k < D; ++k) rh[g] += R[g][n][d][k] * s[0][k];
          }
          const auto bv = [&](int g) { return bias[g][n][d]; };
          double h = 0;
          switch (in.options.cell) {
            case Cell::kLstm: {
              const double i = sigmoid(x[0] + rh[0] + bv(0)), f = sigmoid(x[1] + rh[1] + bv(1));
              const double z = std::tanh(x[2] + rh[2] + bv(2)), og = sigmoid(x[3] + rh[3] + bv(3));
              const double c = f * s[1][d] + i * z;
              h = og * std::tanh(c);
              next[1][d] = c;
              break;
            }
            case Cell::kSlstm: {
              const double it = x[0] + rh[0] + bv(0), ft = x[1] + rh[1] + bv(1);
              const double z = std::tanh(x[2] + rh[2] + bv(2)), og = sigmoid(x[3] + rh[3] + bv(3));
              const double logf = log_sigmoid(ft);
              const double c_prev = s[1][d], n_prev = s[2][d], m_prev = s[3][d];
              const double m = n_prev == 0.0 ? it : std::max(it, logf + m_prev);
              const double ig = std::min(std::exp(it - m), 1.0);
              const double fg = std::min(std::exp(logf + m_prev - m), 1.0);
              const double c = fg * c_prev + ig * z;
              const double nn = std::max(1.0, fg * n_prev + ig);
              h = og * c / nn;
              next[1][d] = c;
              next[2][d] = nn;
              next[3][d] = m;
              break;
            }
            case Cell::kGru: {
              const double rg = sigmoid(x[0] + rh[0] + bv(0)), z = sigmoid(x[1] + rh[1] + bv(1));
              const double nc = std::tanh(x[2] + bv(2) + rg * (rh[2] + bv(3)));
              h = (1 - z) * nc + z * s[0][d];
              break;
            }
            case Cell::kElman: h = std::tanh(x[0] + rh[0] + bv(0)); break;
          }
          next[0][d] = clip > 0 ? std::clamp(h, -clip, clip) : h;
        }
        s = next;
        for (int64_t st = 0; st < l.states; ++st)
          for (int64_t d = 0; d < D; ++d) o[st][bb][t][n][d] = s[st][d];
      }
    }
  }
  return out;
}

// The same function as differentiable torch ops (double), with the options as
// CELLS.md defines them for the backward: m constant, the n clamp as identity,
// cut = no gradient into h through R, clip = clamp that gradient, forward clip
// = straight-through. Returns states_all [S, B, T, N, D].
inline torch::Tensor autograd_reference(const OpInputs& in) {
  using torch::Tensor;
  const CellLayout l = cell_layout(in.options.cell);
  const int64_t B = in.wx.size(0), T = in.wx.size(1), N = in.wx.size(3), D = in.wx.size(4);
  const Options& opt = in.options;
  Tensor s0 = in.initial.defined() ? in.initial.select(2, 0)
                                   : torch::zeros({l.states, B, N, D}, in.wx.options());
  std::vector<Tensor> s = s0.unbind(0);  // each [B, N, D]
  std::vector<Tensor> steps;
  for (int64_t t = 0; t < T; ++t) {
    if (opt.reset_mask) {
      const Tensor mask = opt.reset_mask->select(1, t).view({B, 1, 1});
      for (int64_t st = 0; st < l.states; ++st) s[st] = torch::where(mask, s0[st], s[st]);
    }
    Tensor h_for_r = s[0] * 1.0;  // its own node: the gradient reaching h through R
    if (opt.gradient_recurrent_cut) h_for_r = h_for_r.detach();
    if (opt.gradient_recurrent_clip > 0 && h_for_r.requires_grad()) {
      const double c = opt.gradient_recurrent_clip;
      h_for_r.register_hook([c](Tensor g) { return g.clamp(-c, c); });
    }
    // rh[b, g, n, :] = R[g, n] @ h[b, n, :]
    const Tensor rh = torch::einsum("gnij,bnj->bgni", {in.r, h_for_r});
    const Tensor x = in.wx.select(1, t);  // [B, G, N, D]
    const auto pre = [&](int g) { return x.select(1, g) + rh.select(1, g) + in.b[g]; };
    std::vector<Tensor> next = s;
    Tensor h;
    switch (opt.cell) {
      case Cell::kLstm: {
        const Tensor i = torch::sigmoid(pre(0)), f = torch::sigmoid(pre(1));
        const Tensor z = torch::tanh(pre(2)), og = torch::sigmoid(pre(3));
        next[1] = f * s[1] + i * z;
        h = og * torch::tanh(next[1]);
        break;
      }
      case Cell::kSlstm: {
        const Tensor it = pre(0), ft = pre(1);
        const Tensor z = torch::tanh(pre(2)), og = torch::sigmoid(pre(3));
        const Tensor logf = torch::log_sigmoid(ft);
        const Tensor m = torch::where(s[2] == 0, it, torch::maximum(it, logf + s[3])).detach();
        const Tensor ig = torch::exp(it - m), fg = torch::exp(logf + s[3].detach() - m);
        next[1] = fg * s[1] + ig * z;
        const Tensor n_raw = fg * s[2] + ig;
        next[2] = n_raw + (torch::clamp_min(n_raw, 1.0) - n_raw).detach();
        next[3] = m;
        h = og * next[1] / next[2];
        break;
      }
      case Cell::kGru: {
        const Tensor rg = torch::sigmoid(pre(0)), z = torch::sigmoid(pre(1));
        const Tensor nc = torch::tanh(x.select(1, 2) + in.b[2] + rg * (rh.select(1, 2) + in.b[3]));
        h = (1 - z) * nc + z * s[0];
        break;
      }
      case Cell::kElman: h = torch::tanh(pre(0)); break;
    }
    if (opt.forward_clip > 0) {
      const double c = opt.forward_clip;
      h = h + (h.clamp(-c, c) - h).detach();
    }
    next[0] = h;
    s = next;
    steps.push_back(torch::stack(s));  // [S, B, N, D]
  }
  return torch::stack(steps, 2);  // [S, B, T, N, D]
}

inline double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kDouble) - b.to(torch::kDouble)).abs().max().item<double>();
}

inline double relative_error(const torch::Tensor& got, const torch::Tensor& want) {
  const auto w = want.to(torch::kDouble);
  return (got.to(torch::kDouble) - w).norm().item<double>() / (w.norm().item<double>() + 1e-300);
}

}  // namespace flashrnn::testing

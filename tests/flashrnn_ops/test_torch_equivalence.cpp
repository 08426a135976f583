// A dense one-head LSTM / GRU is torch's nn.LSTM / nn.GRU with the weights
// mapped as CELLS.md says; forward and gradients must agree.
#include <gtest/gtest.h>

#include "reference.h"

namespace flashrnn::testing {
namespace {

struct TorchRnnWeights {
  torch::Tensor w_ih, w_hh, b_ih, b_hh;  // torch's parameter layout, gates stacked
};

TorchRnnWeights random_weights(int64_t gates, int64_t input, int64_t hidden) {
  const auto o = torch::TensorOptions().dtype(torch::kDouble).requires_grad(true);
  const double scale = 1.0 / std::sqrt(double(hidden));
  return {(torch::rand({gates * hidden, input}) * 2 - 1).mul(scale).to(torch::kDouble).set_requires_grad(true),
          (torch::rand({gates * hidden, hidden}) * 2 - 1).mul(scale).to(torch::kDouble).set_requires_grad(true),
          torch::randn({gates * hidden}, o), torch::randn({gates * hidden}, o)};
}

TEST(TorchEquivalence, LstmMatchesTorchLstm) {
  torch::manual_seed(20);
  const int64_t B = 3, T = 11, I = 5, H = 7;
  const TorchRnnWeights w = random_weights(4, I, H);
  const auto x = torch::randn({B, T, I}, torch::kDouble).requires_grad_(true);
  const auto h0 = torch::randn({1, B, H}, torch::kDouble), c0 = torch::randn({1, B, H}, torch::kDouble);

  const auto [y_torch, h_torch, c_torch] =
      torch::lstm(x, {h0, c0}, {w.w_ih, w.w_hh, w.b_ih, w.b_hh}, /*has_biases=*/true,
                  /*num_layers=*/1, /*dropout=*/0.0, /*train=*/false, /*bidirectional=*/false,
                  /*batch_first=*/true);

  // Wx = x W_ihᵀ; R = W_hh as [4, 1, H, H] (gate order i, f, z/g, o); b = b_ih + b_hh.
  Options opt;
  opt.cell = Cell::kLstm;
  const auto wx = torch::matmul(x, w.w_ih.t()).view({B, T, 4, 1, H});
  const auto initial = torch::stack({h0, c0}).view({2, B, 1, 1, H});
  const Result ours = flashrnn(wx, w.w_hh.view({4, 1, H, H}), (w.b_ih + w.b_hh).view({4, 1, H}),
                               initial, opt);
  const auto y_ours = ours.states_all[0].view({B, T, H});
  EXPECT_LT(max_abs_diff(y_ours, y_torch), 1e-12);
  EXPECT_LT(max_abs_diff(ours.last_states[1].view({B, H}), c_torch.view({B, H})), 1e-12);

  // Gradients through both, for the same loss.
  const auto g = torch::randn_like(y_torch);
  const auto grads_of = [&](const torch::Tensor& y) {
    return torch::autograd::grad({(y * g).sum()}, {x, w.w_hh, w.b_hh});
  };
  const auto gt = grads_of(y_torch), go = grads_of(y_ours);
  for (size_t i = 0; i < gt.size(); ++i) EXPECT_LT(max_abs_diff(go[i], gt[i]), 1e-12) << i;
}

TEST(TorchEquivalence, GruMatchesTorchGru) {
  torch::manual_seed(21);
  const int64_t B = 4, T = 9, I = 6, H = 5;
  const TorchRnnWeights w = random_weights(3, I, H);
  const auto x = torch::randn({B, T, I}, torch::kDouble).requires_grad_(true);
  const auto h0 = torch::randn({1, B, H}, torch::kDouble);

  const auto [y_torch, h_torch] =
      torch::gru(x, h0, {w.w_ih, w.w_hh, w.b_ih, w.b_hh}, true, 1, 0.0, false, false, true);

  // b = (b_ir + b_hr, b_iz + b_hz, b_in, b_hn): the reset gate scales R_n h + b_hn.
  const auto bi = w.b_ih.view({3, H}), bh = w.b_hh.view({3, H});
  const auto b = torch::stack({bi[0] + bh[0], bi[1] + bh[1], bi[2], bh[2]}).view({4, 1, H});
  Options opt;
  opt.cell = Cell::kGru;
  const Result ours = flashrnn(torch::matmul(x, w.w_ih.t()).view({B, T, 3, 1, H}),
                               w.w_hh.view({3, 1, H, H}), b, h0.view({1, B, 1, 1, H}), opt);
  const auto y_ours = ours.states_all[0].view({B, T, H});
  EXPECT_LT(max_abs_diff(y_ours, y_torch), 1e-12);

  const auto g = torch::randn_like(y_torch);
  const auto grads_of = [&](const torch::Tensor& y) {
    return torch::autograd::grad({(y * g).sum()}, {x, w.w_hh, w.b_ih, w.b_hh});
  };
  const auto gt = grads_of(y_torch), go = grads_of(y_ours);
  for (size_t i = 0; i < gt.size(); ++i) EXPECT_LT(max_abs_diff(go[i], gt[i]), 1e-12) << i;
}

}  // namespace
}  // namespace flashrnn::testing

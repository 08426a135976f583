// sLSTM's stabiliser: long sequences stay finite; the first-step rule holds.
#include <gtest/gtest.h>

#include "reference.h"

namespace flashrnn::testing {
namespace {

TEST(Slstm, StaysFiniteOverLongSequences) {
  torch::manual_seed(40);
  // Large input gates would overflow exp() without the stabiliser.
  OpInputs in = random_inputs(Cell::kSlstm, 2, 4096, 2, 8, torch::kFloat, /*with_initial=*/false);
  in.wx = in.wx * 20;
  in.wx.requires_grad_(true);
  const Result r = in.run();
  EXPECT_TRUE(torch::isfinite(r.states_all).all().item<bool>());
  EXPECT_GT(r.states_all[3].abs().max().item<double>(), 88.0);  // e^m would overflow float32
  EXPECT_LE(r.states_all[0].abs().max().item<double>(), 1.0 + 1e-6);  // |h| = |o·c/n| ≤ 1
  r.states_all[0].sum().backward();
  EXPECT_TRUE(torch::isfinite(in.wx.grad()).all().item<bool>());
}

TEST(Slstm, FirstStepStartsTheStabiliserAtTheInputGate) {
  torch::manual_seed(41);
  const OpInputs in = random_inputs(Cell::kSlstm, 3, 2, 2, 5, torch::kDouble, false);
  const Result r = in.run();
  // With zero initial states (n = 0): m_1 = ĩ_1, so i' = 1 and n_1 = 1.
  const auto i_pre = in.wx.select(1, 0).select(1, 0) +
                     torch::einsum("nij,bnj->bni", {in.r[0], torch::zeros({3, 2, 5}, torch::kDouble)}) +
                     in.b[0];
  EXPECT_LT(max_abs_diff(r.states_all[3].select(1, 0), i_pre), 1e-12);
  EXPECT_LT(max_abs_diff(r.states_all[2].select(1, 0), torch::ones_like(i_pre)), 1e-12);
  // From the second step on, m_t = max(ĩ_t, log σ(f̃_t) + m_{t−1}) ≥ ĩ_t.
  EXPECT_TRUE((r.states_all[2].select(1, 1) >= 1.0).all().item<bool>());
}

}  // namespace
}  // namespace flashrnn::testing

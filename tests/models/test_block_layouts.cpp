// The layouts and init schemes the README promises, checked against torch's own
// modules or plain loops: where the gates sit in Wx and R, the head-wise
// projection, the causal conv, rotary positions, attention, the linear scan.
#include <gtest/gtest.h>

#include <cmath>

#include "flashtrain/models/attention_mixer.h"
#include "flashtrain/models/causal_conv.h"
#include "flashtrain/models/linear_scan_mixer.h"
#include "flashtrain/models/recurrent_mixer.h"
#include "flashtrain/models/residual_block.h"
#include "flashtrain/models/rotary.h"
#include "headwise_gates.h"
#include "model_test_util.h"

namespace flashtrain::models::testing {
namespace {

const auto f64 = torch::TensorOptions().dtype(torch::kDouble);

torch::Tensor param(const torch::nn::Module& m, const std::string& name) {
  return m.named_parameters()[name];
}

// One dense head: the mixer is torch's nn.LSTM (same gate order i, f, z, o)
// followed by the output projection.
TEST(RecurrentMixerLayout, OneDenseLstmHeadIsTorchLstm) {
  torch::manual_seed(1);
  const int64_t d_model = 6, hidden = 5;
  RecurrentBlockOptions o;
  o.num_heads = 1;
  o.head_dim = hidden;
  RecurrentMixer mixer(flashrnn::Cell::kLstm, BlockContext{d_model, 1}, o);
  mixer.to(torch::kDouble);
  perturb_parameters(mixer, 0.3);

  torch::nn::LSTM lstm(torch::nn::LSTMOptions(d_model, hidden).batch_first(true));
  lstm->to(torch::kDouble);
  {
    torch::NoGradGuard no_grad;
    lstm->named_parameters()["weight_ih_l0"].copy_(param(mixer, "wx.weight"));
    lstm->named_parameters()["weight_hh_l0"].copy_(param(mixer, "r").view({4 * hidden, hidden}));
    lstm->named_parameters()["bias_ih_l0"].copy_(param(mixer, "b").flatten());
    lstm->named_parameters()["bias_hh_l0"].zero_();
  }
  const torch::Tensor x = torch::randn({3, 7, d_model}, f64);
  const torch::Tensor h = std::get<0>(lstm(x));
  const torch::Tensor want = torch::linear(h, param(mixer, "out_proj.weight"));
  EXPECT_LT(max_abs_diff(mixer.forward(x), want), 1e-12);
}

// GRU: Wx and R hold (r, z, n); b holds (r, z, n_input, n_recurrent), and the
// last one is torch's bias_hh of n.
TEST(RecurrentMixerLayout, OneDenseGruHeadIsTorchGru) {
  torch::manual_seed(2);
  const int64_t d_model = 6, hidden = 5;
  RecurrentBlockOptions o;
  o.num_heads = 1;
  o.head_dim = hidden;
  RecurrentMixer mixer(flashrnn::Cell::kGru, BlockContext{d_model, 1}, o);
  mixer.to(torch::kDouble);
  perturb_parameters(mixer, 0.3);

  torch::nn::GRU gru(torch::nn::GRUOptions(d_model, hidden).batch_first(true));
  gru->to(torch::kDouble);
  const torch::Tensor b = param(mixer, "b").flatten();  // 4 slots of `hidden`
  {
    torch::NoGradGuard no_grad;
    gru->named_parameters()["weight_ih_l0"].copy_(param(mixer, "wx.weight"));
    gru->named_parameters()["weight_hh_l0"].copy_(param(mixer, "r").view({3 * hidden, hidden}));
    gru->named_parameters()["bias_ih_l0"].copy_(b.narrow(0, 0, 3 * hidden));
    gru->named_parameters()["bias_hh_l0"].zero_();
    gru->named_parameters()["bias_hh_l0"]
        .narrow(0, 2 * hidden, hidden)
        .copy_(b.narrow(0, 3 * hidden, hidden));
  }
  const torch::Tensor x = torch::randn({3, 7, d_model}, f64);
  const torch::Tensor want = torch::linear(std::get<0>(gru(x)), param(mixer, "out_proj.weight"));
  EXPECT_LT(max_abs_diff(mixer.forward(x), want), 1e-12);
}

// The block-diagonal projection is the dense one with the off-head blocks zero:
// head n's gates read input slice n only. Dense rows are ordered (gate, head, unit).
TEST(RecurrentMixerLayout, BlockDiagonalInputIsDenseWithZeroOffHeadBlocks) {
  torch::manual_seed(3);
  const int64_t d_model = 12, heads = 3, d = 4, gates = 4, slice = d_model / heads;
  RecurrentBlockOptions o;
  o.num_heads = heads;
  o.block_diagonal_input = true;
  RecurrentMixer diagonal(flashrnn::Cell::kLstm, BlockContext{d_model, 1}, o);
  o.block_diagonal_input = false;
  RecurrentMixer dense(flashrnn::Cell::kLstm, BlockContext{d_model, 1}, o);
  for (RecurrentMixer* m : {&diagonal, &dense}) m->to(torch::kDouble);
  perturb_parameters(diagonal, 0.3);

  const torch::Tensor headwise = param(diagonal, "wx.weight");  // [N, G*D, d_model/N]
  ASSERT_EQ(headwise.sizes(), (std::vector<int64_t>{heads, gates * d, slice}));
  torch::Tensor full = torch::zeros({gates, heads, d, d_model}, f64);
  for (int64_t n = 0; n < heads; ++n)
    full.select(1, n).narrow(2, n * slice, slice).copy_(headwise[n].view({gates, d, slice}));
  {
    torch::NoGradGuard no_grad;
    param(dense, "wx.weight").copy_(full.view({gates * heads * d, d_model}));
    for (const char* name : {"r", "b", "out_proj.weight"})
      param(dense, name).copy_(param(diagonal, name));
  }
  const torch::Tensor x = torch::randn({2, 5, d_model}, f64);
  EXPECT_LT(max_abs_diff(diagonal.forward(x), dense.forward(x)), 1e-12);
}

// The conv is torch's Conv1d(groups = C, padding = K-1) with the outputs past
// the end dropped (then SiLU), so an export loads into that module.
TEST(CausalDepthwiseConvLayout, IsTorchConv1dPaddedOnTheLeft) {
  torch::manual_seed(4);
  const int64_t channels = 5, kernel = 4, steps = 9;
  CausalDepthwiseConv conv(channels, kernel);
  conv->to(torch::kDouble);
  torch::nn::Conv1d reference(
      torch::nn::Conv1dOptions(channels, channels, kernel).groups(channels).padding(kernel - 1));
  reference->to(torch::kDouble);
  {
    torch::NoGradGuard no_grad;
    reference->weight.copy_(param(*conv, "weight"));
    reference->bias.copy_(param(*conv, "bias"));
  }
  const torch::Tensor x = torch::randn({2, steps, channels}, f64);
  const torch::Tensor want = torch::silu(reference(x.transpose(1, 2)).narrow(2, 0, steps).transpose(1, 2));
  EXPECT_LT(max_abs_diff(conv(x), want), 1e-12);
}

// The sLSTM's gate projections: gate g of head n is weights[g, n] applied to
// head n's slice of x_if (i, f) or x_zo (z, o), in Wx's [B, T, 4, N, D];
// gradients as those of the einsum that says so.
TEST(HeadwiseGateProjection, IsOneHeadwiseMatmulPerGate) {
  torch::manual_seed(6);
  const int64_t heads = 3, d = 4;
  const torch::Tensor x_if = torch::randn({2, 5, heads * d}, f64).requires_grad_(true);
  const torch::Tensor x_zo = torch::randn({2, 5, heads * d}, f64).requires_grad_(true);
  const torch::Tensor w = torch::randn({4, heads, d, d}, f64).requires_grad_(true);
  const torch::Tensor got = headwise_gate_projection(x_if, x_zo, w);
  const auto per_gate = [&](const torch::Tensor& x, int64_t g) {
    return torch::einsum("btni,noi->btno", {x.view({2, 5, heads, d}), w[g]});
  };
  const torch::Tensor want =
      torch::stack({per_gate(x_if, 0), per_gate(x_if, 1), per_gate(x_zo, 2), per_gate(x_zo, 3)}, 2);
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_LT(max_abs_diff(got, want), 1e-12);
  const torch::Tensor probe = torch::randn_like(want);
  const auto got_grads = torch::autograd::grad({(got * probe).sum()}, {x_if, x_zo, w});
  const auto want_grads = torch::autograd::grad({(want * probe).sum()}, {x_if, x_zo, w});
  for (int i = 0; i < 3; ++i) EXPECT_LT(max_abs_diff(got_grads[i], want_grads[i]), 1e-12) << "gradient " << i;
}

TEST(Rotary, ScoresDependOnlyOnRelativePosition) {
  torch::manual_seed(5);
  const torch::Tensor q = torch::randn({1, 1, 2, 8}, f64), k = torch::randn({1, 1, 2, 8}, f64);
  const auto score = [&](int64_t q_position, int64_t k_position) {
    return (apply_rotary(q, q_position, 10000.0) * apply_rotary(k, k_position, 10000.0)).sum(-1);
  };
  EXPECT_LT(max_abs_diff(score(7, 3), score(107, 103)), 1e-10);
  EXPECT_GT(max_abs_diff(score(7, 3), score(7, 4)), 1e-3);
  EXPECT_LT(max_abs_diff(apply_rotary(q, 0, 10000.0), q), 1e-15);  // position 0: no rotation
  // A rotation keeps each pair's length.
  const torch::Tensor rotated = apply_rotary(q, 1234, 10000.0);
  const auto pair_lengths = [](const torch::Tensor& t) {
    return t.narrow(-1, 0, 4).pow(2) + t.narrow(-1, 4, 4).pow(2);
  };
  EXPECT_LT(max_abs_diff(pair_lengths(rotated), pair_lengths(q)), 1e-12);
}

// Attention against softmax(q k^T / sqrt(hd) + causal mask) v written out.
TEST(AttentionMixerLayout, MatchesExplicitCausalSoftmax) {
  torch::manual_seed(6);
  const int64_t d_model = 8, heads = 2, hd = 4, batch = 2, steps = 6;
  TransformerBlockOptions o;
  o.num_heads = heads;
  AttentionMixer mixer(BlockContext{d_model, 1}, o);
  mixer.to(torch::kDouble);
  const torch::Tensor x = torch::randn({batch, steps, d_model}, f64);
  const auto heads_of = [&](const char* w) {
    return torch::linear(x, param(mixer, w)).view({batch, steps, heads, hd});
  };
  const torch::Tensor q = apply_rotary(heads_of("wq.weight"), 0, o.rope_theta).transpose(1, 2);
  const torch::Tensor k = apply_rotary(heads_of("wk.weight"), 0, o.rope_theta).transpose(1, 2);
  const torch::Tensor v = heads_of("wv.weight").transpose(1, 2);
  const torch::Tensor future = torch::ones({steps, steps}, torch::kBool).triu(1);
  const torch::Tensor scores = q.matmul(k.transpose(-1, -2)) / std::sqrt(double(hd));
  const torch::Tensor attended = scores.masked_fill(future, -INFINITY).softmax(-1).matmul(v);
  const torch::Tensor want = torch::linear(
      attended.transpose(1, 2).reshape({batch, steps, d_model}), param(mixer, "wo.weight"));
  EXPECT_LT(max_abs_diff(mixer.forward(x), want), 1e-12);
}

// x_t = a_t x_{t-1} + (1 - a_t) v_t, y_t = out_proj(x_t silu(g_t)), as a loop.
TEST(LinearScanMixerLayout, MatchesTheRecurrenceAsALoop) {
  torch::manual_seed(7);
  const int64_t d_model = 6, hidden = 5, batch = 2, steps = 8;
  LinearScanBlockOptions o;
  o.hidden_dim = hidden;
  LinearScanMixer mixer(BlockContext{d_model, 1}, o);
  mixer.to(torch::kDouble);
  perturb_parameters(mixer, 0.3);
  const torch::Tensor x = torch::randn({batch, steps, d_model}, f64);
  const auto parts = torch::linear(x, param(mixer, "in_proj.weight")).chunk(3, -1);
  const torch::Tensor a = torch::sigmoid(parts[0] + param(mixer, "gate_bias"));
  torch::Tensor state = torch::zeros({batch, hidden}, f64);
  std::vector<torch::Tensor> states;
  for (int64_t t = 0; t < steps; ++t) {
    state = a.select(1, t) * state + (1 - a.select(1, t)) * parts[1].select(1, t);
    states.push_back(state);
  }
  const torch::Tensor want = torch::linear(torch::stack(states, 1) * torch::silu(parts[2]),
                                           param(mixer, "out_proj.weight"));
  EXPECT_LT(max_abs_diff(mixer.forward(x), want), 1e-12);
}

// The init schemes README.md states.
TEST(InitSchemes, GateBiasesRecurrentMatricesAndProjections) {
  torch::manual_seed(8);
  const int64_t d_model = 256, num_blocks = 4;
  const BlockContext c{d_model, num_blocks};
  BlockOptions o;
  o.recurrent.num_heads = 4;  // D = 64
  o.slstm.num_heads = 4;

  ResidualBlock lstm(BlockKind::kLstm, c, o);
  const torch::Tensor b = param(*lstm, "mixer.b");
  const torch::Tensor spaced = torch::linspace(1.0, 3.0, 64).expand({4, 64});
  EXPECT_TRUE(b[1].allclose(spaced)) << "forget gate: 1..3 across each head";
  for (int64_t slot : {0, 2, 3}) EXPECT_EQ(b[slot].abs().max().item<double>(), 0.0);
  const torch::Tensor r = param(*lstm, "mixer.r");
  EXPECT_LE(r.abs().max().item<double>(), 1.0 / 8.0);  // U(-1/sqrt(D), 1/sqrt(D))
  EXPECT_GT(r.abs().max().item<double>(), 0.9 / 8.0);
  EXPECT_NEAR(param(*lstm, "mixer.wx.weight").std().item<double>(), std::sqrt(2.0 / (5 * 256)),
              2e-3);
  EXPECT_NEAR(param(*lstm, "mixer.out_proj.weight").std().item<double>(), 2.0 / (4 * 16), 2e-3);
  EXPECT_NEAR(param(*lstm, "ffn.down.weight").std().item<double>(), 2.0 / (4 * 16), 2e-3);
  EXPECT_TRUE(param(*lstm, "mixer_norm.weight").eq(1).all().item<bool>());

  ResidualBlock gru(BlockKind::kGru, c, o);
  EXPECT_TRUE(param(*gru, "mixer.b")[1].allclose(spaced)) << "update gate z: 1..3";

  ResidualBlock slstm(BlockKind::kSlstm, c, o);
  EXPECT_EQ(param(*slstm, "mixer.r").abs().max().item<double>(), 0.0);  // xLSTM: zeros
  EXPECT_TRUE(param(*slstm, "mixer.b")[1].allclose(torch::linspace(3.0, 6.0, 64).expand({4, 64})));

  ResidualBlock scan(BlockKind::kLinearScan, c, o);
  const torch::Tensor a = torch::sigmoid(param(*scan, "mixer.gate_bias"));
  EXPECT_NEAR(a[0].item<double>(), 1.0 - 1.0 / 4.0, 1e-6);
  EXPECT_NEAR(a[-1].item<double>(), 1.0 - 1.0 / 1024.0, 1e-6);
  EXPECT_TRUE((a.slice(0, 1) > a.slice(0, 0, -1)).all().item<bool>()) << "time constants increase";
}

}  // namespace
}  // namespace flashtrain::models::testing

// Gradients of every input: central finite differences in float64, and the
// autograd reference (which also covers the parts FD cannot: sLSTM's m).
#include <gtest/gtest.h>

#include "reference.h"

namespace flashrnn::testing {
namespace {

// A scalar loss that weights every output element randomly. For sLSTM, c and n
// enter as c·e^m and n·e^m: the unstabilised values, which do not depend on m,
// so their finite differences equal the gradient of the m-is-constant backward.
struct Loss {
  torch::Tensor w_all, w_last;
  Cell cell;

  torch::Tensor operator()(const Result& r) const {
    torch::Tensor all = r.states_all, last = r.last_states;
    if (cell == Cell::kSlstm) {
      all = stabiliser_free(all);
      last = stabiliser_free(last);
    }
    return (all * w_all).sum() + (last * w_last).sum();
  }

  static torch::Tensor stabiliser_free(const torch::Tensor& s) {
    const torch::Tensor scale = torch::exp(s[3]);
    return torch::stack({s[0], s[1] * scale, s[2] * scale});
  }
};

Loss random_loss(const OpInputs& in) {
  const Result shape = in.run();
  const int64_t kept = in.options.cell == Cell::kSlstm ? 3 : shape.states_all.size(0);
  return {torch::randn_like(shape.states_all.narrow(0, 0, kept)),
          torch::randn_like(shape.last_states.narrow(0, 0, kept)), in.options.cell};
}

// Central differences of the loss with respect to every element of *param.
torch::Tensor finite_differences(OpInputs in, torch::Tensor OpInputs::*param, const Loss& loss) {
  const double eps = 1e-6;
  torch::NoGradGuard no_grad;
  torch::Tensor& p = in.*param;
  p = p.clone();
  torch::Tensor grad = torch::zeros_like(p);
  auto flat = p.view(-1);
  auto g = grad.view(-1);
  for (int64_t i = 0; i < flat.numel(); ++i) {
    const double v = flat[i].item<double>();
    flat[i] = v + eps;
    const double up = loss(in.run()).item<double>();
    flat[i] = v - eps;
    const double down = loss(in.run()).item<double>();
    flat[i] = v;
    g[i] = (up - down) / (2 * eps);
  }
  return grad;
}

struct Analytic {
  torch::Tensor wx, r, b, initial;
};

Analytic analytic_gradients(OpInputs in, const std::function<torch::Tensor(const OpInputs&)>& loss) {
  for (torch::Tensor* t : {&in.wx, &in.r, &in.b, &in.initial})
    *t = t->detach().clone().requires_grad_(true);
  loss(in).backward();
  return {in.wx.grad(), in.r.grad(), in.b.grad(), in.initial.grad()};
}

class GradientTest : public ::testing::TestWithParam<Cell> {};

TEST_P(GradientTest, MatchesFiniteDifferences) {
  torch::manual_seed(10);
  const OpInputs in = random_inputs(GetParam(), 2, 4, 2, 3);
  const Loss loss = random_loss(in);
  const Analytic a = analytic_gradients(in, [&](const OpInputs& x) { return loss(x.run()); });
  const double tol = 1e-6;
  EXPECT_LT(max_abs_diff(a.wx, finite_differences(in, &OpInputs::wx, loss)), tol);
  EXPECT_LT(max_abs_diff(a.r, finite_differences(in, &OpInputs::r, loss)), tol);
  EXPECT_LT(max_abs_diff(a.b, finite_differences(in, &OpInputs::b, loss)), tol);
  torch::Tensor fd_initial = finite_differences(in, &OpInputs::initial, loss);
  torch::Tensor got_initial = a.initial;
  if (GetParam() == Cell::kSlstm) {
    // m is a constant of the backward: its initial value gets no gradient.
    EXPECT_EQ(got_initial[3].abs().max().item<double>(), 0.0);
    fd_initial = fd_initial.narrow(0, 0, 3);
    got_initial = got_initial.narrow(0, 0, 3);
  }
  EXPECT_LT(max_abs_diff(got_initial, fd_initial), tol);
}

TEST_P(GradientTest, MatchesAutogradReferenceOnEveryState) {
  torch::manual_seed(11);
  const OpInputs in = random_inputs(GetParam(), 3, 6, 2, 4);
  const Result shape = in.run();
  const torch::Tensor w_all = torch::randn_like(shape.states_all);
  const torch::Tensor w_last = torch::randn_like(shape.last_states);
  const Analytic ours = analytic_gradients(in, [&](const OpInputs& x) {
    const Result r = x.run();
    return (r.states_all * w_all).sum() + (r.last_states * w_last).sum();
  });
  const Analytic ref = analytic_gradients(in, [&](const OpInputs& x) {
    const torch::Tensor all = autograd_reference(x);
    return (all * w_all).sum() + (all.narrow(2, all.size(2) - 1, 1) * w_last).sum();
  });
  EXPECT_LT(max_abs_diff(ours.wx, ref.wx), 1e-10);
  EXPECT_LT(max_abs_diff(ours.r, ref.r), 1e-10);
  EXPECT_LT(max_abs_diff(ours.b, ref.b), 1e-10);
  EXPECT_LT(max_abs_diff(ours.initial, ref.initial.defined() ? ref.initial
                                                             : torch::zeros_like(ours.initial)),
            1e-10);
}

TEST_P(GradientTest, NoInitialStatesMeansNoGradientForThem) {
  OpInputs in = random_inputs(GetParam(), 2, 3, 1, 4, torch::kDouble, /*with_initial=*/false);
  in.wx.requires_grad_(true);
  in.run().states_all.sum().backward();
  EXPECT_TRUE(in.wx.grad().defined());
  EXPECT_GT(in.wx.grad().abs().sum().item<double>(), 0.0);
}

TEST_P(GradientTest, Float32InputsGetFloat32Gradients) {
  torch::manual_seed(12);
  const OpInputs exact = random_inputs(GetParam(), 2, 9, 2, 8);
  OpInputs single = exact;
  for (torch::Tensor* t : {&single.wx, &single.r, &single.b, &single.initial})
    *t = t->to(torch::kFloat);
  const auto loss = [](const OpInputs& x) { return x.run().states_all.select(0, 0).sum(); };
  const Analytic got = analytic_gradients(single, loss);
  OpInputs rounded = single;
  for (torch::Tensor* t : {&rounded.wx, &rounded.r, &rounded.b, &rounded.initial})
    *t = t->to(torch::kDouble);
  const Analytic want = analytic_gradients(rounded, loss);
  EXPECT_EQ(got.r.scalar_type(), torch::kFloat);
  EXPECT_LT(relative_error(got.wx, want.wx), 1e-5);
  EXPECT_LT(relative_error(got.r, want.r), 1e-5);
  EXPECT_LT(relative_error(got.b, want.b), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(AllCells, GradientTest,
                         ::testing::Values(Cell::kLstm, Cell::kSlstm, Cell::kGru, Cell::kElman),
                         [](const auto& info) { return std::string(to_string(info.param)); });

}  // namespace
}  // namespace flashrnn::testing

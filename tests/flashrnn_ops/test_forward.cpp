// Forward of every cell against the float64 scalar loop, over shapes and dtypes.
#include <gtest/gtest.h>

#include "reference.h"

namespace flashrnn::testing {
namespace {

struct Shape {
  int64_t B, T, N, D;
};

class ForwardTest : public ::testing::TestWithParam<Cell> {};

TEST_P(ForwardTest, MatchesScalarReferenceInFloat64) {
  torch::manual_seed(1);
  for (const Shape s : {Shape{1, 1, 1, 1}, Shape{3, 7, 2, 5}, Shape{2, 17, 3, 4}, Shape{5, 3, 1, 16}}) {
    for (bool with_initial : {false, true}) {
      const OpInputs in = random_inputs(GetParam(), s.B, s.T, s.N, s.D, torch::kDouble, with_initial);
      const Result got = in.run();
      const torch::Tensor want = scalar_reference(in);
      ASSERT_EQ(got.states_all.sizes(), want.sizes());
      EXPECT_LT(max_abs_diff(got.states_all, want), 1e-12)
          << "B=" << s.B << " T=" << s.T << " N=" << s.N << " D=" << s.D;
      EXPECT_TRUE(got.last_states.equal(got.states_all.narrow(2, s.T - 1, 1)));
      EXPECT_EQ(got.states_all.scalar_type(), torch::kDouble);
    }
  }
}

// Lower-precision inputs compute in float32 and return their own dtype.
TEST_P(ForwardTest, LowerPrecisionInputsStayCloseToFloat64) {
  torch::manual_seed(2);
  const struct {
    torch::Dtype dtype;
    double tolerance;  // relative bound: a few roundings of the dtype (2^-24, 2^-8, 2^-11) per step
  } cases[] = {{torch::kFloat, 1e-5}, {torch::kBFloat16, 2e-2}, {torch::kHalf, 5e-3}};
  for (const auto& c : cases) {
    const OpInputs exact = random_inputs(GetParam(), 4, 33, 2, 8);
    OpInputs low = exact;
    for (torch::Tensor* t : {&low.wx, &low.r, &low.b, &low.initial}) *t = t->to(c.dtype);
    const Result got = low.run();
    EXPECT_EQ(got.states_all.scalar_type(), c.dtype);
    // Reference on the rounded inputs: what is left is the op's own error.
    OpInputs rounded = low;
    for (torch::Tensor* t : {&rounded.wx, &rounded.r, &rounded.b, &rounded.initial})
      *t = t->to(torch::kDouble);
    const torch::Tensor want = scalar_reference(rounded);
    // m (sLSTM state 3) is a log-scale offset, compared absolutely below.
    const int64_t compared = GetParam() == Cell::kSlstm ? 3 : want.size(0);
    EXPECT_LT(relative_error(got.states_all.narrow(0, 0, compared), want.narrow(0, 0, compared)),
              c.tolerance)
        << c.dtype;
  }
}

// Half-precision Wx with float32 R, b and initial states (fp32 master weights):
// computed in float32 from the unrounded parameters; gradients in each dtype.
TEST_P(ForwardTest, Float32ParametersWithHalfPrecisionInputs) {
  torch::manual_seed(4);
  OpInputs mixed = random_inputs(GetParam(), 3, 21, 2, 8, torch::kFloat);
  mixed.wx = mixed.wx.to(torch::kBFloat16);
  OpInputs exact = mixed;
  for (torch::Tensor* t : {&exact.wx, &exact.r, &exact.b, &exact.initial})
    *t = t->to(torch::kDouble);
  for (torch::Tensor* t : {&mixed.wx, &mixed.r, &mixed.b, &mixed.initial}) t->requires_grad_(true);
  const Result got = mixed.run();
  EXPECT_EQ(got.states_all.scalar_type(), torch::kBFloat16);
  const int64_t compared = GetParam() == Cell::kSlstm ? 3 : got.states_all.size(0);
  EXPECT_LT(relative_error(got.states_all.narrow(0, 0, compared),
                           scalar_reference(exact).narrow(0, 0, compared)),
            1e-2);
  got.states_all.select(0, 0).sum().backward();
  EXPECT_EQ(mixed.wx.grad().scalar_type(), torch::kBFloat16);
  for (const torch::Tensor* t : {&mixed.r, &mixed.b, &mixed.initial})
    EXPECT_EQ(t->grad().scalar_type(), torch::kFloat);
}

TEST_P(ForwardTest, NonContiguousInputsGiveTheSameResult) {
  torch::manual_seed(3);
  const OpInputs in = random_inputs(GetParam(), 3, 5, 2, 4);
  OpInputs strided = in;
  // Same values, transposed storage.
  strided.wx = in.wx.transpose(0, 1).contiguous().transpose(0, 1);
  strided.r = in.r.transpose(2, 3).contiguous().transpose(2, 3);
  ASSERT_FALSE(strided.wx.is_contiguous());
  ASSERT_FALSE(strided.r.is_contiguous());
  EXPECT_TRUE(strided.run().states_all.equal(in.run().states_all));
}

INSTANTIATE_TEST_SUITE_P(AllCells, ForwardTest,
                         ::testing::Values(Cell::kLstm, Cell::kSlstm, Cell::kGru, Cell::kElman),
                         [](const auto& info) { return std::string(to_string(info.param)); });

}  // namespace
}  // namespace flashrnn::testing

// Forward of the vanilla backend (CPU) against the float64 loop of scan_reference.h.
#include <gtest/gtest.h>

#include "scan_reference.h"

namespace flashrnn::scan_testing {
namespace {

std::string name_of(const ScanCase& c) {
  return std::string(to_string(c.layout)) + " B=" + std::to_string(c.batch) +
         " D=" + std::to_string(c.channels) + " T=" + std::to_string(c.steps) +
         (c.reverse ? " reverse" : "") + (c.with_x0 ? " x0" : "");
}

// Every layout, direction and x0 choice, with odd and tiny T.
std::vector<ScanCase> forward_cases() {
  std::vector<ScanCase> cases;
  for (ScanLayout layout : {ScanLayout::kBDT, ScanLayout::kBTD})
    for (bool reverse : {false, true})
      for (bool with_x0 : {false, true})
        for (int64_t steps : {1, 2, 7, 33, 100}) {
          ScanCase c;
          c.batch = 2;
          c.channels = 3;
          c.steps = steps;
          c.layout = layout;
          c.reverse = reverse;
          c.with_x0 = with_x0;
          cases.push_back(c);
        }
  return cases;
}

TEST(ScanForward, VanillaFloat64MatchesLoop) {
  torch::manual_seed(1);
  for (const ScanCase& c : forward_cases()) {
    SCOPED_TRACE(name_of(c));
    const Inputs in = random_inputs(c);
    const ScanResult out = scan(in.a, in.b, in.options(c, ScanBackend::kVanilla));
    const ForwardRef ref = reference_forward(c, in.a, in.b, in.x0);
    ASSERT_EQ(out.x.sizes(), in.a.sizes());
    ASSERT_EQ(out.last.sizes(), torch::IntArrayRef({c.batch, c.channels}));
    EXPECT_EQ(out.x.scalar_type(), torch::kDouble);
    EXPECT_LT(relative_error(out.x, ref.x), 1e-12);
    EXPECT_LT(relative_error(out.last, ref.last), 1e-12);
  }
}

// Storage in 16 and 32 bits computes in float32: the error is the storage's rounding.
TEST(ScanForward, VanillaNarrowDtypesMatchLoopOnRoundedInputs) {
  torch::manual_seed(2);
  const std::vector<std::pair<torch::Dtype, double>> dtypes = {
      {torch::kFloat, 1e-6}, {torch::kBFloat16, 1e-2}, {torch::kHalf, 2e-3}};
  for (const auto& [dtype, tolerance] : dtypes) {
    for (ScanLayout layout : {ScanLayout::kBDT, ScanLayout::kBTD}) {
      ScanCase c;
      c.batch = 3;
      c.channels = 5;
      c.steps = 61;
      c.layout = layout;
      c.reverse = layout == ScanLayout::kBTD;
      SCOPED_TRACE(name_of(c) + " " + std::string(c10::toString(dtype)));
      const Inputs in64 = random_inputs(c, 0.5, 1.0);
      Inputs in{in64.a.to(dtype), in64.b.to(dtype), in64.x0.to(dtype)};
      const ScanResult out = scan(in.a, in.b, in.options(c, ScanBackend::kVanilla));
      EXPECT_EQ(out.x.scalar_type(), dtype);
      EXPECT_EQ(out.last.scalar_type(), dtype);
      const ForwardRef ref = reference_forward(c, in.a, in.b, in.x0);
      EXPECT_LT(relative_error(out.x, ref.x), tolerance);
      EXPECT_LT(relative_error(out.last, ref.last), tolerance);
    }
  }
}

// Zero and negative gates need no special path (no logarithms, no division).
TEST(ScanForward, ZeroGatesRestartTheRecurrence) {
  ScanCase c;
  c.batch = 1;
  c.channels = 2;
  c.steps = 9;
  Inputs in = random_inputs(c);
  in.a.select(2, 4).zero_();
  const ScanResult out = scan(in.a, in.b, in.options(c, ScanBackend::kVanilla));
  EXPECT_TRUE(torch::equal(out.x.select(2, 4), in.b.select(2, 4)));
  EXPECT_LT(relative_error(out.x, reference_forward(c, in.a, in.b, in.x0).x), 1e-12);
}

// Views with arbitrary strides give the same result as dense copies.
TEST(ScanForward, NonContiguousInputs) {
  torch::manual_seed(3);
  ScanCase c;
  c.batch = 2;
  c.channels = 4;
  c.steps = 11;
  c.layout = ScanLayout::kBTD;
  const Inputs in = random_inputs(c);
  const torch::Tensor a_view = in.a.permute({2, 1, 0}).contiguous().permute({2, 1, 0});
  ASSERT_FALSE(a_view.is_contiguous());
  const ScanResult out = scan(a_view, in.b, in.options(c, ScanBackend::kVanilla));
  EXPECT_LT(relative_error(out.x, reference_forward(c, in.a, in.b, in.x0).x), 1e-12);
}

// auto picks vanilla on the CPU; reverse equals flipping time twice.
TEST(ScanForward, ReverseIsTheFlippedForward) {
  torch::manual_seed(4);
  ScanCase c;
  c.steps = 17;
  const Inputs in = random_inputs(c);
  ScanOptions forward_options = in.options(c, ScanBackend::kAuto);
  ScanOptions reverse_options = forward_options;
  reverse_options.reverse = true;
  const ScanResult flipped = scan(in.a.flip(2), in.b.flip(2), forward_options);
  const ScanResult reversed = scan(in.a, in.b, reverse_options);
  EXPECT_TRUE(torch::allclose(reversed.x, flipped.x.flip(2), 1e-12, 1e-12));
  EXPECT_TRUE(torch::allclose(reversed.last, flipped.last, 1e-12, 1e-12));
}

}  // namespace
}  // namespace flashrnn::scan_testing

// Gradients of the vanilla backend (CPU): against the float64 backward loop of
// scan_reference.h, and against central finite differences of the op itself.
#include <gtest/gtest.h>

#include "scan_reference.h"

namespace flashrnn::scan_testing {
namespace {

std::vector<ScanCase> gradient_cases() {
  std::vector<ScanCase> cases;
  for (ScanLayout layout : {ScanLayout::kBDT, ScanLayout::kBTD})
    for (bool reverse : {false, true})
      for (bool with_x0 : {false, true})
        for (int64_t steps : {1, 6, 13}) {
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

std::string name_of(const ScanCase& c) {
  return std::string(to_string(c.layout)) + " T=" + std::to_string(c.steps) +
         (c.reverse ? " reverse" : "") + (c.with_x0 ? " x0" : "");
}

struct Grads {
  torch::Tensor da, db, dx0;
};

// d/d(a, b, x0) of  Σ x·wx + Σ last·wl  through autograd; either weight may be undefined.
Grads autograd_grads(const ScanCase& c, const Inputs& in, const torch::Tensor& wx,
                     const torch::Tensor& wl, ScanBackend backend) {
  Inputs leaf{in.a.clone().requires_grad_(true), in.b.clone().requires_grad_(true),
              in.x0.defined() ? in.x0.clone().requires_grad_(true) : torch::Tensor()};
  const ScanResult out = scan(leaf.a, leaf.b, leaf.options(c, backend));
  torch::Tensor loss = torch::zeros({}, in.a.options());
  if (wx.defined()) loss = loss + (out.x * wx).sum();
  if (wl.defined()) loss = loss + (out.last * wl).sum();
  loss.backward();
  return {leaf.a.grad(), leaf.b.grad(), leaf.x0.defined() ? leaf.x0.grad() : torch::Tensor()};
}

TEST(ScanGradients, VanillaMatchesBackwardLoop) {
  torch::manual_seed(11);
  for (const ScanCase& c : gradient_cases()) {
    SCOPED_TRACE(name_of(c));
    const Inputs in = random_inputs(c);
    const torch::Tensor wx = torch::randn(sizes_of(c), torch::kDouble);
    const torch::Tensor wl = torch::randn({c.batch, c.channels}, torch::kDouble);
    const Grads g = autograd_grads(c, in, wx, wl, ScanBackend::kVanilla);
    const ForwardRef fwd = reference_forward(c, in.a, in.b, in.x0);
    const GradientsRef ref = reference_backward(c, in.a, fwd.x, in.x0, wx, wl);
    EXPECT_LT(relative_error(g.da, ref.da), 1e-12);
    EXPECT_LT(relative_error(g.db, ref.db), 1e-12);
    if (c.with_x0) {
      EXPECT_LT(relative_error(g.dx0, ref.dx0), 1e-12);
    }
  }
}

// Only one of the two outputs in the loss: the other's gradient never exists.
TEST(ScanGradients, EitherOutputAlone) {
  torch::manual_seed(12);
  ScanCase c;
  c.steps = 9;
  c.layout = ScanLayout::kBTD;
  const Inputs in = random_inputs(c);
  const torch::Tensor wx = torch::randn(sizes_of(c), torch::kDouble);
  const torch::Tensor wl = torch::randn({c.batch, c.channels}, torch::kDouble);
  const ForwardRef fwd = reference_forward(c, in.a, in.b, in.x0);
  for (bool use_x : {true, false}) {
    SCOPED_TRACE(use_x ? "x only" : "last only");
    const torch::Tensor gx = use_x ? wx : torch::Tensor(), gl = use_x ? torch::Tensor() : wl;
    const Grads g = autograd_grads(c, in, gx, gl, ScanBackend::kVanilla);
    const GradientsRef ref = reference_backward(c, in.a, fwd.x, in.x0, gx, gl);
    EXPECT_LT(relative_error(g.da, ref.da), 1e-12);
    EXPECT_LT(relative_error(g.db, ref.db), 1e-12);
    EXPECT_LT(relative_error(g.dx0, ref.dx0), 1e-12);
  }
}

// Central differences of L = Σ x·wx + Σ last·wl, element by element, for a, b and x0.
TEST(ScanGradients, VanillaMatchesFiniteDifferences) {
  torch::manual_seed(13);
  for (ScanLayout layout : {ScanLayout::kBDT, ScanLayout::kBTD})
    for (bool reverse : {false, true}) {
      ScanCase c;
      c.batch = 1;
      c.channels = 2;
      c.steps = 5;
      c.layout = layout;
      c.reverse = reverse;
      SCOPED_TRACE(name_of(c));
      const Inputs in = random_inputs(c);
      const torch::Tensor wx = torch::randn(sizes_of(c), torch::kDouble);
      const torch::Tensor wl = torch::randn({c.batch, c.channels}, torch::kDouble);
      const Grads g = autograd_grads(c, in, wx, wl, ScanBackend::kVanilla);
      const auto loss = [&](const Inputs& p) {
        const ScanResult out = scan(p.a, p.b, p.options(c, ScanBackend::kVanilla));
        return ((out.x * wx).sum() + (out.last * wl).sum()).item<double>();
      };
      const double eps = 1e-6;
      const std::vector<std::pair<torch::Tensor Inputs::*, torch::Tensor>> params = {
          {&Inputs::a, g.da}, {&Inputs::b, g.db}, {&Inputs::x0, g.dx0}};
      for (const auto& [member, analytic] : params) {
        const torch::Tensor flat_grad = analytic.reshape(-1);
        for (int64_t i = 0; i < flat_grad.numel(); ++i) {
          Inputs plus{in.a.clone(), in.b.clone(), in.x0.clone()};
          Inputs minus{in.a.clone(), in.b.clone(), in.x0.clone()};
          (plus.*member).view(-1)[i] += eps;
          (minus.*member).view(-1)[i] -= eps;
          const double numeric = (loss(plus) - loss(minus)) / (2 * eps);
          EXPECT_NEAR(flat_grad[i].item<double>(), numeric, 1e-6 * (1 + std::abs(numeric)))
              << "element " << i;
        }
      }
    }
}

// bfloat16 storage: gradients in bfloat16, close to the float64 loop on rounded inputs.
TEST(ScanGradients, VanillaBFloat16) {
  torch::manual_seed(14);
  ScanCase c;
  c.batch = 2;
  c.channels = 4;
  c.steps = 37;
  const Inputs in64 = random_inputs(c, 0.5, 1.0);
  const Inputs in{in64.a.to(torch::kBFloat16), in64.b.to(torch::kBFloat16),
                  in64.x0.to(torch::kBFloat16)};
  const torch::Tensor wx = torch::randn(sizes_of(c)).to(torch::kBFloat16);
  const Grads g = autograd_grads(c, in, wx, torch::Tensor(), ScanBackend::kVanilla);
  EXPECT_EQ(g.da.scalar_type(), torch::kBFloat16);
  // The reference uses the op's own bfloat16 x, as the backward does.
  const ScanResult out = scan(in.a, in.b, in.options(c, ScanBackend::kVanilla));
  const GradientsRef ref = reference_backward(c, in.a, out.x, in.x0, wx, torch::Tensor());
  EXPECT_LT(relative_error(g.da, ref.da), 1e-2);
  EXPECT_LT(relative_error(g.db, ref.db), 1e-2);
  EXPECT_LT(relative_error(g.dx0, ref.dx0), 1e-2);
}

}  // namespace
}  // namespace flashrnn::scan_testing

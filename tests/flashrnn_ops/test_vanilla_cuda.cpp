// The vanilla backend on a GPU (its pointwise kernels) against the CPU in
// float64. Skipped where there is no GPU.
#include <gtest/gtest.h>

#include "reference.h"

namespace flashrnn::testing {
namespace {

class VanillaCudaTest : public ::testing::TestWithParam<Cell> {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  }
};

OpInputs to_device(const OpInputs& in, torch::Device device, torch::Dtype dtype) {
  OpInputs out = in;
  for (torch::Tensor* t : {&out.wx, &out.r, &out.b, &out.initial})
    *t = t->to(device, dtype).detach().requires_grad_(true);
  if (in.options.reset_mask) out.options.reset_mask = in.options.reset_mask->to(device);
  return out;
}

TEST_P(VanillaCudaTest, ForwardAndGradientsMatchCpuFloat64) {
  torch::manual_seed(50);
  const struct {
    torch::Dtype dtype;
    double tolerance;
  } cases[] = {{torch::kDouble, 1e-12}, {torch::kFloat, 1e-5}, {torch::kBFloat16, 1e-2},
               {torch::kHalf, 5e-3}};
  for (const auto& c : cases) {
    for (const auto [B, T, N, D] : {std::array<int64_t, 4>{1, 1, 1, 16}, {7, 33, 3, 32},
                                    {67, 17, 12, 64}}) {
      OpInputs cpu = random_inputs(GetParam(), B, T, N, D);
      torch::Tensor mask = torch::rand({B, T}) < 0.1;
      cpu.options.reset_mask = mask;
      OpInputs gpu = to_device(cpu, torch::kCUDA, c.dtype);
      gpu.options.backend = Backend::kVanilla;
      // The reference sees the same rounded inputs the GPU sees.
      OpInputs ref = to_device(gpu, torch::kCPU, torch::kDouble);

      const Result rg = gpu.run();
      const Result rc = ref.run();
      const int64_t compared = GetParam() == Cell::kSlstm ? 3 : rc.states_all.size(0);
      EXPECT_LT(relative_error(rg.states_all.narrow(0, 0, compared).cpu(),
                               rc.states_all.narrow(0, 0, compared)),
                c.tolerance)
          << c.dtype << " B=" << B << " T=" << T << " N=" << N << " D=" << D;

      const torch::Tensor w = torch::randn_like(rc.states_all.select(0, 0));
      (rg.states_all.select(0, 0).to(torch::kDouble) * w.cuda()).sum().backward();
      (rc.states_all.select(0, 0) * w).sum().backward();
      for (auto [g, r] : {std::pair{&gpu.wx, &ref.wx}, {&gpu.r, &ref.r}, {&gpu.b, &ref.b},
                          {&gpu.initial, &ref.initial}})
        EXPECT_LT(relative_error(g->grad().cpu(), r->grad()), 4 * c.tolerance) << c.dtype;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllCells, VanillaCudaTest,
                         ::testing::Values(Cell::kLstm, Cell::kSlstm, Cell::kGru, Cell::kElman),
                         [](const auto& info) { return std::string(to_string(info.param)); });

}  // namespace
}  // namespace flashrnn::testing

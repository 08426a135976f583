#include <gtest/gtest.h>
#include <torch/torch.h>
#include "flashrnn/flashrnn.h"
TEST(Smoke, Runs) {
  auto wx = torch::randn({2, 3, 4, 1, 5});
  auto r = torch::randn({4, 1, 5, 5});
  auto b = torch::randn({4, 1, 5});
  auto res = flashrnn::flashrnn(wx, r, b, std::nullopt);
  EXPECT_EQ(res.states_all.sizes(), torch::IntArrayRef({2, 2, 3, 1, 5}));
}

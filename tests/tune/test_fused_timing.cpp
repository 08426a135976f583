// How long the tiling model takes to solve: the tuner runs when an op first
// sees a shape, so it must be fast. The issue asks for well under 10 ms; the
// assertion allows 50 ms so that a loaded CI machine does not fail it, and the
// measured time is printed.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "flashrnn/tune/fused_model.h"
#include "flashrnn/tune/fused_select.h"

namespace flashrnn::tune {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

TEST(FusedTiming, TilingModelSolvesInMilliseconds) {
  const DeviceProps h100 = device_fixture("h100");
  const FusedShape shape{Cell::kLstm, 12, 64, 16, DType::kBf16};
  const FusedTilingModel model(h100, shape);
  int variables = 0;
  for (const Variable& v : model.problem().variables()) variables += !v.is_parameter;
  EXPECT_GE(variables, 15);
  EXPECT_LE(variables, 40);

  std::vector<double> solve_ms, select_ms;
  size_t solutions = 0;
  uint64_t nodes = 0;
  for (int run = 0; run < 7; ++run) {
    const SolveResult r = solve_all(model.problem());
    solve_ms.push_back(r.stats.seconds * 1e3);
    solutions = r.solutions.size();
    nodes = r.stats.nodes;
    const auto start = std::chrono::steady_clock::now();
    const FusedSelection s = select_fused_config(h100, shape);
    select_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    ASSERT_TRUE(s.config);
  }
  std::printf(
      "fused tiling model, lstm 12x64 on h100: %d variables, %zu constraints, %zu solutions, "
      "%llu nodes; solve_all median %.2f ms (min %.2f); select_fused_config (parse + solve + "
      "rank) median %.2f ms\n",
      variables, model.problem().constraints().size(), solutions,
      static_cast<unsigned long long>(nodes), median(solve_ms),
      *std::min_element(solve_ms.begin(), solve_ms.end()), median(select_ms));
  EXPECT_LT(median(solve_ms), 50.0);
  EXPECT_LT(median(select_ms), 50.0);
}

}  // namespace
}  // namespace flashrnn::tune

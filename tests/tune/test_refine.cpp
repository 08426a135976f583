// Timed refinement with a fake timer: which candidates are timed, which wins,
// what is cached and when the cache is trusted.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "flashrnn/tune/fused_select.h"
#include "flashrnn/tune/refine.h"

namespace flashrnn::tune {
namespace {

namespace fs = std::filesystem;

// A deterministic "measurement" that disagrees with the cost model: it likes
// few warps, so the cost model's first choice usually loses.
double fake_ms(const FusedConfig& c) { return 1.0 + 0.01 * c.warps + 0.001 * c.k_reg; }

struct CountingTimer {
  int calls = 0;
  std::optional<double> operator()(const FusedConfig& c) {
    ++calls;
    return fake_ms(c);
  }
};

class RefineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (fs::temp_directory_path() / ("flashtune_refine_" + std::to_string(::getpid()) + "_" +
                                          ::testing::UnitTest::GetInstance()->current_test_info()->name() +
                                          ".json"))
                .string();
    fs::remove(path_);
  }
  void TearDown() override {
    fs::remove(path_);
    fs::remove(path_ + ".lock");
  }
  std::string path_;
  const DeviceProps h100_ = device_fixture("h100");
  const FusedShape shape_{Cell::kLstm, 12, 64, 16, DType::kBf16};
};

TEST_F(RefineTest, TimesTheTopCandidatesKeepsTheFastestAndCachesIt) {
  const FusedRanking ranking = rank_fused_configs(h100_, shape_);
  ASSERT_GE(ranking.configs.size(), 5u);
  // The fastest of the cost model's best five, by the fake timer.
  const RankedConfig* want = &ranking.configs[0];
  for (size_t i = 1; i < 5; ++i)
    if (fake_ms(ranking.configs[i].config) < fake_ms(want->config)) want = &ranking.configs[i];
  ASSERT_NE(want, &ranking.configs[0]) << "the fake timer must disagree with the cost model";

  TuningCache cache(path_);
  CountingTimer timer;
  RefineOptions options;
  options.candidates = 5;
  const RefineResult r = refine_fused_config(h100_, shape_, cache, std::ref(timer), options);
  ASSERT_TRUE(r.config);
  EXPECT_FALSE(r.from_cache);
  EXPECT_EQ(timer.calls, 5);
  EXPECT_EQ(r.timed, 5);
  EXPECT_EQ(describe(*r.config), describe(want->config));
  EXPECT_DOUBLE_EQ(*r.time_ms, fake_ms(want->config));
  EXPECT_EQ(r.warning, "");

  // Saved: a fresh process would find it.
  const TuningCache reloaded = TuningCache::load(path_);
  const CachedChoice* cached = reloaded.find(CacheKey::of(h100_, shape_));
  ASSERT_NE(cached, nullptr);
  EXPECT_EQ(cached->decisions, decisions_of(want->config));
  EXPECT_EQ(cached->candidates_timed, 5);

  // The next call, and any batch of the same class, uses the cache: no timing.
  CountingTimer second;
  TuningCache from_disk = TuningCache::load(path_);
  FusedShape smaller = shape_;
  smaller.batch = 9;
  const RefineResult again = refine_fused_config(h100_, smaller, from_disk, std::ref(second));
  EXPECT_TRUE(again.from_cache);
  EXPECT_EQ(second.calls, 0);
  EXPECT_EQ(decisions_of(*again.config), decisions_of(want->config));
}

TEST_F(RefineTest, CandidatesThatCannotRunAreSkipped) {
  TuningCache cache;  // in memory only
  int calls = 0;
  const FusedRanking ranking = rank_fused_configs(h100_, shape_);
  // Only the third candidate runs.
  auto timer = [&](const FusedConfig& c) -> std::optional<double> {
    ++calls;
    if (describe(c) == describe(ranking.configs[2].config)) return 2.5;
    return std::nullopt;
  };
  const RefineResult r = refine_fused_config(h100_, shape_, cache, timer);
  ASSERT_TRUE(r.config);
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(describe(*r.config), describe(ranking.configs[2].config));
  EXPECT_NE(cache.find(CacheKey::of(h100_, shape_)), nullptr);
}

TEST_F(RefineTest, WhenNothingCanBeTimedTheModelsBestIsUsedUncached) {
  TuningCache cache(path_);
  const RefineResult r = refine_fused_config(
      h100_, shape_, cache, [](const FusedConfig&) { return std::optional<double>(); });
  ASSERT_TRUE(r.config);
  EXPECT_FALSE(r.time_ms);
  EXPECT_NE(r.reason.find("could be timed"), std::string::npos) << r.reason;
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_FALSE(fs::exists(path_));
  EXPECT_EQ(describe(*r.config), describe(*select_fused_config(h100_, shape_).config));
}

TEST_F(RefineTest, ACachedChoiceThatNoLongerFitsIsRetimed) {
  TuningCache cache(path_);
  // A layout from a cluster-capable device, cached under the A100's name.
  const DeviceProps a100 = device_fixture("a100");
  const FusedShape big{Cell::kLstm, 3, 256, 16, DType::kBf16};
  FusedDecisions cluster_layout{4, HeadExchange::kCluster, 1, 16, 1, 4, 0};
  cache.put(CacheKey::of(a100, big), CachedChoice{cluster_layout, 0.1, 1});
  CountingTimer timer;
  const RefineResult r = refine_fused_config(a100, big, cache, std::ref(timer));
  ASSERT_TRUE(r.config);
  EXPECT_FALSE(r.from_cache);
  EXPECT_GT(timer.calls, 0);
  EXPECT_NE(r.config->exchange, HeadExchange::kCluster);
  EXPECT_FALSE(cache.find(CacheKey::of(a100, big))->decisions == cluster_layout);
}

TEST_F(RefineTest, ShapesThatDoNotFitAreNotTimed) {
  TuningCache cache(path_);
  CountingTimer timer;
  const FusedShape odd{Cell::kLstm, 1, 72, 16, DType::kBf16};
  const RefineResult r = refine_fused_config(h100_, odd, cache, std::ref(timer));
  EXPECT_FALSE(r.config);
  EXPECT_EQ(timer.calls, 0);
  EXPECT_NE(r.reason.find("head_dim"), std::string::npos) << r.reason;
}

}  // namespace
}  // namespace flashrnn::tune

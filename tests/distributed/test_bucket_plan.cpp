#include "flashtrain/distributed/bucket_plan.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace fd = flashtrain::distributed;

namespace {

// (param index, offset) of every entry of bucket b.
std::vector<std::pair<std::size_t, std::int64_t>> entries(const fd::BucketPlan& plan,
                                                          std::size_t b) {
  std::vector<std::pair<std::size_t, std::int64_t>> out;
  for (const auto& e : plan.buckets.at(b).entries) out.emplace_back(e.param, e.offset);
  return out;
}
using Entries = std::vector<std::pair<std::size_t, std::int64_t>>;

}  // namespace

// Capacities in bytes: first 40, then 100; float32 (4 bytes) parameters.
TEST(BucketPlan, HandComputedSmallCapacities) {
  std::vector<fd::ParamSpec> params{{"a", 10}, {"b", 5}, {"c", 20}, {"d", 3}, {"e", 6}, {"f", 4}};
  fd::BucketOptions opt{100, 40};
  auto plan = fd::plan_buckets(params, opt);
  // Reverse order f(16 B), e(24 B) -> 40 B fills the first bucket.
  // d(12) c(80) -> 92; + b(20) would be 112 > 100: close. b(20) a(40) -> 60.
  ASSERT_EQ(plan.buckets.size(), 3u);
  EXPECT_EQ(entries(plan, 0), (Entries{{5, 0}, {4, 4}}));
  EXPECT_EQ(entries(plan, 1), (Entries{{3, 0}, {2, 3}}));
  EXPECT_EQ(entries(plan, 2), (Entries{{1, 0}, {0, 5}}));
  EXPECT_EQ(plan.buckets[0].numel, 10);
  EXPECT_EQ(plan.buckets[1].numel, 23);
  EXPECT_EQ(plan.buckets[2].bytes(), 60);
  EXPECT_EQ(plan.bucket_of, (std::vector<std::size_t>{2, 2, 1, 1, 0, 0}));
  EXPECT_EQ(plan.entry_of, (std::vector<std::size_t>{1, 0, 1, 0, 1, 0}));
  EXPECT_EQ(fd::describe(plan, params),
            "bucket 0: 2 params, 40 bytes: f, e\n"
            "bucket 1: 2 params, 92 bytes: d, c\n"
            "bucket 2: 2 params, 60 bytes: b, a\n");
}

TEST(BucketPlan, OversizedParameterGetsItsOwnBucket) {
  std::vector<fd::ParamSpec> params{{"emb", 1000}, {"w", 2}, {"big", 50}, {"x", 1}};
  auto plan = fd::plan_buckets(params, fd::BucketOptions{100, 40});
  // x(4) then big(200) would overflow 40: close [x]. big alone (200 > 100).
  // w(8) alone until emb(4000) overflows; emb alone.
  ASSERT_EQ(plan.buckets.size(), 4u);
  EXPECT_EQ(entries(plan, 0), (Entries{{3, 0}}));
  EXPECT_EQ(entries(plan, 1), (Entries{{2, 0}}));
  EXPECT_EQ(entries(plan, 2), (Entries{{1, 0}}));
  EXPECT_EQ(entries(plan, 3), (Entries{{0, 0}}));
  EXPECT_EQ(plan.buckets[3].bytes(), 4000);
}

TEST(BucketPlan, DefaultCapacitiesAre1And25MiB) {
  const std::int64_t mib = 1 << 20;
  // float32 parameters of 0.5 MiB, 0.75 MiB, then 24 of 1 MiB, one of 2 MiB.
  std::vector<fd::ParamSpec> params;
  params.push_back({"p_2mib", 2 * mib / 4});
  for (int i = 0; i < 24; ++i) params.push_back({"p" + std::to_string(i), mib / 4});
  params.push_back({"q_075", 3 * mib / 16});
  params.push_back({"q_05", mib / 8});
  auto plan = fd::plan_buckets(params);
  // q_05 (0.5) + q_075 would be 1.25 > 1: close at 0.5 MiB. Then q_075 + 24 x 1 MiB =
  // 24.75 MiB; + 2 MiB would exceed 25: close. p_2mib alone.
  ASSERT_EQ(plan.buckets.size(), 3u);
  EXPECT_EQ(plan.buckets[0].bytes(), mib / 2);
  EXPECT_EQ(plan.buckets[1].entries.size(), 25u);
  EXPECT_EQ(plan.buckets[1].bytes(), 24 * mib + 3 * mib / 4);
  EXPECT_EQ(plan.buckets[1].entries.front().param, 25u);
  EXPECT_EQ(plan.buckets[1].entries[1].offset, 3 * mib / 16);
  EXPECT_EQ(plan.buckets[2].bytes(), 2 * mib);
}

TEST(BucketPlan, DtypeChangeClosesBucket) {
  std::vector<fd::ParamSpec> params{{"a", 4, 4, 0}, {"b", 4, 2, 1}, {"c", 4, 2, 1}};
  auto plan = fd::plan_buckets(params, fd::BucketOptions{1000, 1000});
  ASSERT_EQ(plan.buckets.size(), 2u);
  EXPECT_EQ(entries(plan, 0), (Entries{{2, 0}, {1, 4}}));
  EXPECT_EQ(plan.buckets[0].element_size, 2);
  EXPECT_EQ(entries(plan, 1), (Entries{{0, 0}}));
  EXPECT_EQ(plan.buckets[1].element_size, 4);
}

TEST(BucketPlan, DeterministicAndEmpty) {
  std::vector<fd::ParamSpec> params;
  for (int i = 0; i < 50; ++i) params.push_back({"p" + std::to_string(i), 1000 + 37 * i});
  fd::BucketOptions opt{20000, 5000};
  EXPECT_EQ(fd::describe(fd::plan_buckets(params, opt), params),
            fd::describe(fd::plan_buckets(params, opt), params));
  // Every parameter appears exactly once; offsets tile each bucket.
  auto plan = fd::plan_buckets(params, opt);
  std::vector<int> seen(params.size(), 0);
  for (const auto& b : plan.buckets) {
    std::int64_t next = 0;
    for (const auto& e : b.entries) {
      ++seen[e.param];
      EXPECT_EQ(e.offset, next);
      next += e.numel;
    }
    EXPECT_EQ(next, b.numel);
  }
  for (int s : seen) EXPECT_EQ(s, 1);
  EXPECT_TRUE(fd::plan_buckets({}).buckets.empty());
  EXPECT_THROW(fd::plan_buckets(params, fd::BucketOptions{0, 1}), std::invalid_argument);
  EXPECT_THROW(fd::plan_buckets({{"neg", -1}}), std::invalid_argument);
}

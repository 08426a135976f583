// Domains: the values each factory produces, narrowing, and bad input.
#include <gtest/gtest.h>

#include <vector>

#include "flashrnn/tune/domain.h"
#include "flashrnn/tune/errors.h"

namespace flashrnn::tune {
namespace {

std::vector<int64_t> all_values(const Domain& d) {
  std::vector<int64_t> v;
  for (uint64_t i = 0; i < d.size(); ++i) v.push_back(d.value_at(i));
  return v;
}

TEST(Domain, FactoriesProduceTheirValues) {
  EXPECT_EQ(all_values(Domain::interval(-2, 3)), (std::vector<int64_t>{-2, -1, 0, 1, 2, 3}));
  EXPECT_EQ(all_values(Domain::multiples_of(16, 1, 70)), (std::vector<int64_t>{16, 32, 48, 64}));
  EXPECT_EQ(all_values(Domain::multiples_of(3, -7, 7)), (std::vector<int64_t>{-6, -3, 0, 3, 6}));
  EXPECT_EQ(all_values(Domain::powers_of_two(3, 40)), (std::vector<int64_t>{4, 8, 16, 32}));
  EXPECT_EQ(all_values(Domain::values({8, -1, 8, 3})), (std::vector<int64_t>{-1, 3, 8}));
  EXPECT_TRUE(Domain::interval(3, 2).empty());
  EXPECT_TRUE(Domain::multiples_of(8, 1, 7).empty());
  EXPECT_EQ(Domain::powers_of_two(1, kMaxMagnitude).size(), 62u);
}

TEST(Domain, MembershipAndIntersection) {
  const Domain d = Domain::multiples_of(4, 0, 40);
  EXPECT_TRUE(d.contains(12));
  EXPECT_FALSE(d.contains(13));
  EXPECT_FALSE(d.contains(44));
  EXPECT_TRUE(d.intersects(13, 16));
  EXPECT_FALSE(d.intersects(13, 15));
  EXPECT_FALSE(d.intersects(41, 100));
  const Domain s = Domain::values({1, 5, 9});
  EXPECT_TRUE(s.intersects(2, 5));
  EXPECT_FALSE(s.intersects(6, 8));
}

TEST(Domain, RestrictKeepsTheGrid) {
  Domain d = Domain::multiples_of(16, 0, 256);
  EXPECT_TRUE(d.restrict_to(20, 100));
  EXPECT_EQ(all_values(d), (std::vector<int64_t>{32, 48, 64, 80, 96}));
  EXPECT_FALSE(d.restrict_to(0, 1000));  // no change
  EXPECT_TRUE(d.restrict_to(97, 1000));
  EXPECT_TRUE(d.empty());

  Domain s = Domain::values({1, 2, 4, 8, 16});
  EXPECT_TRUE(s.restrict_to(3, 9));
  EXPECT_EQ(all_values(s), (std::vector<int64_t>{4, 8}));
}

TEST(Domain, FilterDropsInteriorValuesAndKeepsCompactFormAtTheEnds) {
  Domain d = Domain::interval(0, 9);
  EXPECT_TRUE(d.filter([](int64_t v) { return v >= 2 && v <= 7; }));
  EXPECT_EQ(d.to_string(), "2..7");
  EXPECT_TRUE(d.filter([](int64_t v) { return v % 3 != 0; }));
  EXPECT_EQ(all_values(d), (std::vector<int64_t>{2, 4, 5, 7}));
  EXPECT_EQ(d.to_string(), "{2, 4, 5, 7}");
  EXPECT_FALSE(d.filter([](int64_t) { return true; }));
}

TEST(Domain, AssignNarrowsToOneValueOrToNothing) {
  Domain d = Domain::multiples_of(8, 0, 64);
  d.assign(24);
  EXPECT_TRUE(d.fixed());
  EXPECT_EQ(d.min(), 24);
  Domain e = Domain::multiples_of(8, 0, 64);
  e.assign(25);
  EXPECT_TRUE(e.empty());
}

TEST(Domain, TextForm) {
  EXPECT_EQ(Domain::multiples_of(16, 0, 100).to_string(), "0..96 multiple of 16");
  EXPECT_EQ(Domain::values({4, 1}).to_string(), "{1, 4}");
  EXPECT_EQ(Domain::interval(1, 0).to_string(), "{}");
}

TEST(Domain, BadInputIsRejectedWithTheReason) {
  try {
    Domain::multiples_of(0, 0, 10);
    FAIL() << "a zero step was accepted";
  } catch (const ProblemError& e) {
    EXPECT_NE(std::string(e.what()).find("positive"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Domain::interval(0, kMaxMagnitude + 1), ProblemError);
  EXPECT_THROW(Domain::values({-kMaxMagnitude - 1}), ProblemError);
}

}  // namespace
}  // namespace flashrnn::tune

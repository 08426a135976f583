// The "did you mean" helper.
#include <gtest/gtest.h>

#include "suggest.h"

namespace flashtrain::config {
namespace {

TEST(EditDistance, CountsEachEditOnce) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("lr", "lr"), 0u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("stpes", "steps"), 1u);  // a swap of neighbours
  EXPECT_EQ(edit_distance("lerning_rate", "learning_rate"), 1u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("abc", "ca"), 3u);  // optimal string alignment, not full Damerau
}

TEST(ClosestMatch, SuggestsTyposButNotStrangers) {
  const std::vector<Candidate> keys = {{"lr", "lr"}, {"learning_rate", "lr"}, {"eps", "eps"},
                                       {"weight_decay", "weight_decay"}};
  EXPECT_EQ(closest_match("lerning_rate", keys), "lr");  // through the alias
  EXPECT_EQ(closest_match("LR", keys), "lr");            // case is ignored
  EXPECT_EQ(closest_match("weight_decy", keys), "weight_decay");
  EXPECT_EQ(closest_match("esp", keys), "eps");
  EXPECT_EQ(closest_match("ab", keys), std::nullopt);  // every character replaced
  EXPECT_EQ(closest_match("momentum", keys), std::nullopt);
  EXPECT_EQ(closest_match("x", {}), std::nullopt);
}

TEST(ClosestMatch, TiesGoToTheEarlierCandidate) {
  EXPECT_EQ(closest_match("ab", {{"ax", "first"}, {"xb", "second"}}), "first");
}

}  // namespace
}  // namespace flashtrain::config

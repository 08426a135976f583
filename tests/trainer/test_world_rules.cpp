// How a run spreads over ranks: each rank's device, when flashtrain starts
// ranks itself, nproc against a launcher, resuming on another world size.
#include "flashtrain/trainer/run/world_rules.h"

#include <gtest/gtest.h>

namespace flashtrain::trainer {
namespace {

namespace fd = distributed;

fd::Environment torchrun_world(int world_size, int rank = 0) {
  return fd::parse_environment({{"RANK", std::to_string(rank)}, {"WORLD_SIZE", std::to_string(world_size)},
                                {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29500"}});
}

TEST(WorldRules, EachRankTakesTheGpuOfItsLocalRank) {
  EXPECT_EQ(choose_rank_device("auto", 1, 2), "cuda:1");
  EXPECT_EQ(choose_rank_device("cuda", 0, 8), "cuda:0");
  EXPECT_EQ(choose_rank_device("auto", 3, 0), "cpu");  // no GPU: CPU ranks
  EXPECT_EQ(choose_rank_device("cpu", 1, 2), "cpu");
  try {
    choose_rank_device("cuda", 2, 2);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "LOCAL_RANK=2 needs GPU 2, but 2 GPU(s) are visible; start at most one rank per GPU");
  }
  EXPECT_THROW(choose_rank_device("cuda:1", 0, 2), std::invalid_argument);
}

TEST(WorldRules, LaunchOnlyWhenNoLauncherStartedUs) {
  EXPECT_TRUE(should_launch_ranks(2, fd::parse_environment({})));
  EXPECT_FALSE(should_launch_ranks(1, fd::parse_environment({})));
  EXPECT_FALSE(should_launch_ranks(2, torchrun_world(2)));
  EXPECT_FALSE(should_launch_ranks(2, torchrun_world(1)));  // torchrun of one rank: still torchrun's
  // An sbatch script has SLURM variables for its single task: --nproc still starts ranks.
  EXPECT_TRUE(should_launch_ranks(2, fd::parse_environment({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}})));
  EXPECT_FALSE(should_launch_ranks(2, fd::parse_environment({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"},
                                                             {"SLURM_NODELIST", "n1"}})));
}

TEST(WorldRules, NprocMustMatchTheLaunchersWorld) {
  EXPECT_NO_THROW(check_nproc_fits(1, torchrun_world(4)));
  EXPECT_NO_THROW(check_nproc_fits(4, torchrun_world(4)));  // our own --nproc children
  try {
    check_nproc_fits(2, torchrun_world(4));
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "parallelism.nproc = 2, but torchrun started 4 rank(s); under a launcher keep "
                           "parallelism.nproc = 1");
  }
}

TEST(WorldRules, SameLayoutResumesSilently) {
  const BatchLayout two{2, 4, 1};
  EXPECT_TRUE(plan_resume_layout(two, two, 64).empty());
  EXPECT_TRUE(plan_resume_layout(two, two, std::nullopt).empty());
}

TEST(WorldRules, NewWorldSizeWithTheSameGlobalBatchReshards) {
  const auto notes = plan_resume_layout({2, 4, 1}, {1, 4, 2}, 48);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0], "the checkpoint was written by 2 rank(s), this run has 1: the data continues at the same "
                      "global sample, re-sharded");
  EXPECT_EQ(notes[1], "global batch kept at 8 sequences: 1 rank(s) x 4 x 2 accumulation (was 2 x 4 x 1)");
}

TEST(WorldRules, ChangedGlobalBatchIsSaid) {
  const auto notes = plan_resume_layout({1, 4, 1}, {2, 4, 1}, 16);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[1].find("global batch changes from 4 to 8 sequences"), std::string::npos) << notes[1];
}

TEST(WorldRules, PositionThatDoesNotSplitIsRefused) {
  // 3 ranks x 4 stopped at window 12; 2 ranks x 4 = 8 does not divide 12.
  try {
    plan_resume_layout({3, 4, 1}, {2, 4, 1}, 12);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "cannot continue the checkpoint's data stream on 2 rank(s): it stopped at 12 windows "
                           "into the epoch, not a multiple of world size x local_batch_size = 2 x 4 = 8; world "
                           "sizes that fit: 1, 3");
  }
  // Task streams continue from any sample index.
  EXPECT_NO_THROW(plan_resume_layout({3, 4, 1}, {2, 4, 1}, std::nullopt));
}

}  // namespace
}  // namespace flashtrain::trainer

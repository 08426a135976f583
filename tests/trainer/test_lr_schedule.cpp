#include <gtest/gtest.h>

#include <cmath>

#include "flashtrain/config/load.h"
#include "flashtrain/trainer/step/lr_schedule.h"

namespace flashtrain::trainer {
namespace {

config::Config schedule_config(const std::string& decay, std::int64_t steps, std::int64_t warmup) {
  return config::resolve_defaults({"--optimizer.lr=1e-3", "--lr_scheduler.min_lr_ratio=0.1",
                                   "--lr_scheduler.decay=" + decay, "--lr_scheduler.decay_ratio=0.2",
                                   "--training.steps=" + std::to_string(steps),
                                   "--lr_scheduler.warmup_steps=" + std::to_string(warmup)})
      .config;
}

TEST(LrSchedule, WarmupRisesLinearlyToThePeak) {
  const LrSchedule s(schedule_config("cosine", 100, 10));
  EXPECT_DOUBLE_EQ(s.at(1), 1e-4);
  EXPECT_DOUBLE_EQ(s.at(5), 5e-4);
  EXPECT_DOUBLE_EQ(s.at(10), 1e-3);
}

TEST(LrSchedule, CosineFallsFromPeakToMinimumAtTheLastStep) {
  const LrSchedule s(schedule_config("cosine", 110, 10));
  EXPECT_DOUBLE_EQ(s.at(110), 1e-4);
  // Half-way through the decay: the mean of peak and minimum.
  EXPECT_NEAR(s.at(60), 0.5 * (1e-3 + 1e-4), 1e-15);
  for (std::int64_t step = 11; step < 110; ++step) EXPECT_GT(s.at(step), s.at(step + 1)) << step;
}

TEST(LrSchedule, WsdIsFlatThenDecaysLinearlyOverTheLastFifth) {
  const LrSchedule s(schedule_config("wsd", 100, 10));
  EXPECT_DOUBLE_EQ(s.at(10), 1e-3);
  EXPECT_DOUBLE_EQ(s.at(80), 1e-3);  // decay_ratio 0.2: the last 20 steps decay
  EXPECT_NEAR(s.at(90), 0.5 * (1e-3 + 1e-4), 1e-15);
  EXPECT_DOUBLE_EQ(s.at(100), 1e-4);
}

TEST(LrSchedule, ConstantStaysAtThePeakAfterWarmup) {
  const LrSchedule s(schedule_config("constant", 50, 5));
  EXPECT_DOUBLE_EQ(s.at(3), 6e-4);
  EXPECT_DOUBLE_EQ(s.at(6), 1e-3);
  EXPECT_DOUBLE_EQ(s.at(50), 1e-3);
}

TEST(LrSchedule, WarmupLongerThanTheRunNeverReachesThePeak) {
  const LrSchedule s(schedule_config("cosine", 10, 100));
  EXPECT_DOUBLE_EQ(s.at(10), 1e-4);
}

TEST(LrSchedule, NoWarmupStartsAtThePeak) {
  const LrSchedule s(schedule_config("cosine", 100, 0));
  EXPECT_NEAR(s.at(1), 1e-3, 1e-6);
  EXPECT_LT(s.at(1), 1e-3);
}

TEST(LrSchedule, StepZeroIsAnError) {
  const LrSchedule s(schedule_config("cosine", 10, 2));
  EXPECT_THROW(s.at(0), std::invalid_argument);
}

}  // namespace
}  // namespace flashtrain::trainer

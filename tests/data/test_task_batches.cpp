// Task batches in the trainer's layout, and the accuracy helpers.
#include <gtest/gtest.h>

#include "flashtrain/data/task_metrics.h"
#include "flashtrain/data/tasks.h"
#include "test_util.h"

namespace flashtrain::data {
namespace {

TEST(TaskBatches, MaskedAnswerFormat) {
  const TaskSpec spec{Task::kCycleNavigation, {}, {3, 12}};
  const TaskBatch batch = make_task_batch(spec, 5, 100, 16, 20);
  ASSERT_EQ(batch.input.size(), 16u * 20u);
  ASSERT_EQ(batch.target.size(), 16u * 20u);
  for (std::int64_t b = 0; b < 16; ++b) {
    const TaskSample s = generate_sample(spec, 5, 100 + static_cast<std::uint64_t>(b));
    const auto n = static_cast<std::int64_t>(s.tokens.size());
    ASSERT_EQ(batch.length[static_cast<std::size_t>(b)], n);
    for (std::int64_t t = 0; t < 20; ++t) {
      const std::int32_t in = batch.input[static_cast<std::size_t>(b * 20 + t)];
      const std::int32_t target = batch.target[static_cast<std::size_t>(b * 20 + t)];
      if (t < n - 1) EXPECT_EQ(in, s.tokens[static_cast<std::size_t>(t)]);
      else EXPECT_EQ(in, 0) << "answer and padding read as PAD";
      EXPECT_EQ(target, t == n - 1 ? s.tokens.back() : kIgnoreTarget);
    }
  }
}

TEST(TaskBatches, UnmaskedAnswerIsTheNextTokenTarget) {
  const TaskSpec spec{Task::kParity, {}, {3, 12}};
  const TaskBatch batch = make_task_batch(spec, 5, 0, 8, 12, /*mask_answer=*/false);
  for (std::int64_t b = 0; b < 8; ++b) {
    const TaskSample s = generate_sample(spec, 5, static_cast<std::uint64_t>(b));
    const auto n = static_cast<std::int64_t>(s.tokens.size());
    for (std::int64_t t = 0; t < 12; ++t) {
      EXPECT_EQ(batch.input[static_cast<std::size_t>(b * 12 + t)], t < n ? s.tokens[static_cast<std::size_t>(t)] : 0);
      EXPECT_EQ(batch.target[static_cast<std::size_t>(b * 12 + t)], t == n - 2 ? s.tokens.back() : kIgnoreTarget);
    }
  }
}

TEST(TaskBatches, PerPositionFormatPadsWithThePadToken) {
  const TaskSpec spec{Task::kS5, {}, {1, 10}};
  const TaskBatch batch = make_task_batch(spec, 9, 0, 32, 10);
  for (std::int64_t b = 0; b < 32; ++b) {
    const TaskSample s = generate_sample(spec, 9, static_cast<std::uint64_t>(b));
    const auto n = static_cast<std::int64_t>(s.tokens.size());
    for (std::int64_t t = 0; t < 10; ++t) {
      const auto i = static_cast<std::size_t>(b * 10 + t);
      EXPECT_EQ(batch.input[i], t < n ? s.tokens[static_cast<std::size_t>(t)] : 120);
      EXPECT_EQ(batch.target[i], t < n ? s.targets[static_cast<std::size_t>(t)] : kIgnoreTarget);
    }
  }
}

TEST(TaskBatches, BatchesAreSlicesOfOneStream) {
  const TaskSpec spec{Task::kModularArithmetic, {}, {3, 21}};
  const TaskBatch whole = make_task_batch(spec, 1, 0, 8, 21);
  const TaskBatch tail = make_task_batch(spec, 1, 5, 3, 21);
  EXPECT_TRUE(std::equal(tail.input.begin(), tail.input.end(), whole.input.begin() + 5 * 21));
  EXPECT_TRUE(std::equal(tail.target.begin(), tail.target.end(), whole.target.begin() + 5 * 21));
}

TEST(TaskBatches, ContextShorterThanTheLongestSequenceIsAnError) {
  testing::expect_error<std::invalid_argument>(
      [] { make_task_batch({Task::kParity, {}, {3, 40}}, 0, 0, 4, 39); },
      {"context 39", "max_len 40", "parity"});
}

TEST(TaskMetrics, ScaledAccuracy) {
  EXPECT_DOUBLE_EQ(scaled_accuracy(0.5, 2), 0.0);
  EXPECT_DOUBLE_EQ(scaled_accuracy(1.0, 2), 1.0);
  EXPECT_DOUBLE_EQ(scaled_accuracy(0.2, 5), 0.0);
  EXPECT_DOUBLE_EQ(scaled_accuracy(0.6, 5), 0.5);  // (0.6 - 0.2) / 0.8
  EXPECT_LT(scaled_accuracy(0.0, 2), 0.0);
  EXPECT_THROW(scaled_accuracy(0.5, 1), std::invalid_argument);
}

TEST(TaskMetrics, CountsSkipIgnoredTargets) {
  const std::int32_t I = kIgnoreTarget;
  // Row 0: two scored, both right. Row 1: two scored, one right. Row 2: none scored.
  const std::vector<std::int32_t> targets = {3, I, 4, 1, 2, I, I, I, I};
  const std::vector<std::int32_t> predictions = {3, 9, 4, 1, 0, 7, 5, 5, 5};
  const AccuracyCounts c = count_correct(predictions.data(), targets.data(), 3, 3);
  EXPECT_EQ(c.scored_tokens, 4);
  EXPECT_EQ(c.correct_tokens, 3);
  EXPECT_EQ(c.scored_sequences, 2);
  EXPECT_EQ(c.correct_sequences, 1);
  EXPECT_DOUBLE_EQ(c.token_accuracy(), 0.75);
  EXPECT_DOUBLE_EQ(c.sequence_accuracy(), 0.5);
}

TEST(TaskMetrics, PerfectPredictionsOfABatchScoreOne) {
  const TaskBatch batch = make_task_batch({Task::kZ60, {}, {1, 30}}, 2, 0, 64, 30);
  AccuracyCounts total;
  total += count_correct(batch.target.data(), batch.target.data(), 64, 30);
  EXPECT_EQ(total.scored_sequences, 64);
  EXPECT_DOUBLE_EQ(total.sequence_accuracy(), 1.0);
}

TEST(TaskMetrics, CountsByLengthSplitRowsByTheirLength) {
  const std::int32_t I = kIgnoreTarget;
  // Four rows of a context of 4, answers last: lengths 2, 4, 2, 4 and one row
  // of length 3 with no scored target (it counts nowhere).
  const std::vector<std::int32_t> targets = {I, 1, I, I,   // length 2, right
                                             I, I, I, 2,   // length 4, wrong
                                             I, 2, I, I,   // length 2, right
                                             I, I, I, 1,   // length 4, right
                                             I, I, I, I};  // length 3, not scored
  const std::vector<std::int32_t> predictions = {0, 1, 0, 0,  //
                                                 0, 0, 0, 1,  //
                                                 0, 2, 0, 0,  //
                                                 0, 0, 0, 1,  //
                                                 0, 0, 0, 0};
  const std::vector<std::int32_t> lengths = {2, 4, 2, 4, 3};
  const LengthCounts c =
      count_correct_by_length(predictions.data(), targets.data(), lengths.data(), 5, 4);
  EXPECT_EQ(c.correct, (std::vector<std::int64_t>{0, 0, 2, 0, 1}));
  EXPECT_EQ(c.total, (std::vector<std::int64_t>{0, 0, 2, 0, 2}));

  LengthCounts sum;
  sum += c;
  sum += c;
  EXPECT_EQ(sum.correct, (std::vector<std::int64_t>{0, 0, 4, 0, 2}));
  EXPECT_EQ(sum.total, (std::vector<std::int64_t>{0, 0, 4, 0, 4}));

  const std::vector<std::int32_t> too_long = {2, 5, 2, 4, 3};
  testing::expect_error<std::invalid_argument>(
      [&] { count_correct_by_length(predictions.data(), targets.data(), too_long.data(), 5, 4); },
      {"row 1 has length 5", "[0, 4]"});
}

TEST(TaskMetrics, CountsByLengthOfAGeneratedBatchCoverItsLengths) {
  const TaskBatch batch = make_task_batch({Task::kParity, {}, {5, 12}}, 3, 0, 64, 12);
  const LengthCounts c = count_correct_by_length(batch.target.data(), batch.target.data(),
                                                 batch.length.data(), 64, 12);
  ASSERT_EQ(c.total.size(), 13u);
  std::int64_t total = 0;
  for (std::size_t length = 0; length < c.total.size(); ++length) {
    EXPECT_EQ(c.correct[length], c.total[length]) << "length " << length;
    if (length < 5) EXPECT_EQ(c.total[length], 0) << "length " << length;
    total += c.total[length];
  }
  EXPECT_EQ(total, 64);
}

}  // namespace
}  // namespace flashtrain::data

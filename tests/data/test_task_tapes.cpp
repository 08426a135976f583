// The tasks added from Delétang et al.'s context-sensitive set — bucket sort
// (an output tape), missing duplicate — on hand-worked examples, and the batch
// rules that decide which positions a score counts: an output tape's targets,
// and the per-position tasks' first scored position.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "flashtrain/data/error.h"
#include "flashtrain/data/tasks.h"
#include "test_util.h"

namespace flashtrain::data {
namespace {

using testing::expect_error;

TEST(TaskTapes, BucketSortOutputsTheSymbolsInOrder) {
  const Vocabulary v = task_vocabulary(Task::kBucketSort);
  EXPECT_EQ(v.num_classes(), 5);
  EXPECT_EQ(v.render(task_outputs(Task::kBucketSort, {}, v.ids("c a e a b |"))), "a a b c e");
  EXPECT_EQ(v.render(task_outputs(Task::kBucketSort, {}, v.ids("d |"))), "d");
  EXPECT_EQ(v.render(task_outputs(Task::kBucketSort, {}, v.ids("e d c b a |"))), "a b c d e");
  expect_error<DataError>([&] { task_outputs(Task::kBucketSort, {}, v.ids("a b")); }, {"separator"});
  expect_error<DataError>([&] { task_outputs(Task::kBucketSort, {}, {1, 6, 2, 6}); }, {"position 1"});
  expect_error<std::invalid_argument>([&] { task_answer(Task::kBucketSort, {}, {1, 6}); }, {"task_outputs"});
}

TEST(TaskTapes, BucketSortSamplesAreInputsSeparatorAndSortedOutput) {
  const TaskSpec spec{Task::kBucketSort, {}, {3, 41}};
  for (std::uint64_t i = 0; i < 200; ++i) {
    const TaskSample s = generate_sample(spec, 4, i);
    ASSERT_EQ(s.tokens.size() % 2, 1u);  // n symbols, '|', n outputs
    const std::size_t n = s.tokens.size() / 2;
    EXPECT_EQ(s.answer_tokens, static_cast<int>(n));
    EXPECT_EQ(s.tokens[n], 6);
    std::vector<std::int32_t> sorted(s.tokens.begin(), s.tokens.begin() + std::ptrdiff_t(n));
    std::sort(sorted.begin(), sorted.end());
    EXPECT_TRUE(std::equal(sorted.begin(), sorted.end(), s.tokens.begin() + std::ptrdiff_t(n + 1)));
  }
}

TEST(TaskTapes, MissingDuplicateAnswersTheHiddenBit) {
  const Vocabulary v = task_vocabulary(Task::kMissingDuplicate);
  const auto answer = [&](const std::string& inputs) {
    return v.names.at(std::size_t(task_answer(Task::kMissingDuplicate, {}, v.ids(inputs))));
  };
  EXPECT_EQ(answer("1 0 _ 1 0 1"), "1");  // w = 101: the first half's last bit
  EXPECT_EQ(answer("_ 0 1 1 0 1"), "1");  // hidden in the first half: the second holds it
  EXPECT_EQ(answer("0 _"), "0");
  EXPECT_EQ(answer("1 1 0 0 1 1 0 _"), "0");
  expect_error<DataError>([&] { answer("1 0 1 1 0 1"); }, {"no token is hidden"});
  expect_error<DataError>([&] { answer("1 0 _ 0 0 1"); }, {"halves differ at offset 0"});
  expect_error<DataError>([&] { answer("1 _ 1"); }, {"doubled string"});
  expect_error<DataError>([&] { answer("_ _"); }, {"position 1", "appears twice"});
}

TEST(TaskTapes, MissingDuplicateSamplesHideOneTokenOfADoubledString) {
  const TaskSpec spec{Task::kMissingDuplicate, {}, {3, 41}};
  for (std::uint64_t i = 0; i < 200; ++i) {
    const TaskSample s = generate_sample(spec, 9, i);
    ASSERT_EQ(s.tokens.size() % 2, 1u);
    const std::size_t n = s.tokens.size() / 2;
    const auto hidden = std::find(s.tokens.begin(), s.tokens.end(), 3);
    ASSERT_NE(hidden, s.tokens.end() - 1);
    EXPECT_EQ(std::count(s.tokens.begin(), s.tokens.end(), 3), 1);
    const std::size_t at = std::size_t(hidden - s.tokens.begin());
    EXPECT_EQ(s.tokens.back(), s.tokens[(at + n) % (2 * n)]);
  }
}

// An output tape is scored on every output token: masked, the inputs hold PAD
// there and the targets are the outputs; unmasked, each output is the target
// of the position before it.
TEST(TaskTapes, OutputTapesAreTheTargets) {
  const TaskSpec spec{Task::kBucketSort, {}, {5, 15}};
  for (const bool mask : {true, false}) {
    const TaskBatch batch = make_task_batch(spec, 3, 0, 16, 15, mask);
    for (std::int64_t b = 0; b < 16; ++b) {
      const TaskSample s = generate_sample(spec, 3, std::uint64_t(b));
      const std::int64_t n = std::int64_t(s.tokens.size()), first_output = n - s.answer_tokens;
      for (std::int64_t p = 0; p < 15; ++p) {
        const std::int32_t input = batch.input[std::size_t(b * 15 + p)];
        const std::int32_t target = batch.target[std::size_t(b * 15 + p)];
        const bool output = p >= first_output && p < n;
        const bool scored = mask ? output : p + 1 >= first_output && p + 1 < n;
        EXPECT_EQ(target, scored ? s.tokens[std::size_t(mask ? p : p + 1)] : kIgnoreTarget) << b << " " << p;
        EXPECT_EQ(input, p < n && !(mask && output) ? s.tokens[std::size_t(p)] : 0) << b << " " << p;
      }
    }
  }
}

// Per-position tasks score no position before first_scored_position (a test
// of length generalisation leaves out the positions seen in training); the
// answer-last tasks ignore it.
TEST(TaskTapes, PerPositionScoringStartsAtTheFirstScoredPosition) {
  const TaskBatch all = make_task_batch({Task::kS5, {}, {10, 20}}, 5, 0, 8, 20);
  const TaskBatch beyond = make_task_batch({Task::kS5, {}, {10, 20}}, 5, 0, 8, 20, true, 12);
  EXPECT_EQ(all.input, beyond.input);
  for (std::size_t b = 0; b < 8; ++b) {
    for (std::size_t p = 0; p < 20; ++p) {
      const std::size_t i = b * 20 + p;
      EXPECT_EQ(beyond.target[i], p < 12 ? kIgnoreTarget : all.target[i]);
      EXPECT_EQ(all.target[i] != kIgnoreTarget, std::int32_t(p) < all.length[b]);
    }
  }
  const TaskBatch parity = make_task_batch({Task::kParity, {}, {3, 10}}, 5, 0, 8, 10, true, 12);
  EXPECT_EQ(parity.target, make_task_batch({Task::kParity, {}, {3, 10}}, 5, 0, 8, 10).target);
  expect_error<std::invalid_argument>([] { make_task_batch({Task::kS5, {}, {3, 10}}, 5, 0, 8, 10, true, -1); },
                                      {"first_scored_position"});
}

// Majority count as the xLSTM paper defines it answers with the count itself,
// so the answers grow with the length: on the test lengths most of them are
// counts the training lengths (almost) never ask for. docs/TASKS.md quotes
// these fractions; the test prints them.
TEST(TaskTapes, MajorityCountTestAnswersAreCountsTrainingRarelyShows) {
  std::map<std::int32_t, int> training;
  const int train_samples = 20000;
  for (int i = 0; i < train_samples; ++i)
    ++training[generate_sample({Task::kMajorityCount, {}, {3, 40}}, 1, std::uint64_t(i)).tokens.back()];
  // A count is rare in training when under 0.1 % of its answers are that count.
  const auto rare = [&](std::int32_t count) { return training[count] < train_samples / 1000; };
  int largest_trained = 0;
  for (const auto& [count, n] : training) largest_trained = std::max(largest_trained, count);
  const std::pair<LengthRange, double> bands[] = {{{40, 256}, 0.6}, {{257, 1024}, 0.99}};
  for (const auto& [lengths, at_least_rare] : bands) {
    TaskOptions options;
    options.max_length = 1024;
    int rare_answers = 0, beyond = 0;
    const int test_samples = 4000;
    for (int i = 0; i < test_samples; ++i) {
      const TaskSample s = generate_sample({Task::kMajorityCount, options, lengths}, 2, std::uint64_t(i));
      const std::int32_t count = s.tokens.back();
      rare_answers += rare(count);
      beyond += count > largest_trained;
    }
    const double rare_fraction = double(rare_answers) / test_samples;
    std::printf("majority_count %d-%d: %.1f %% of answers are counts under 0.1 %% of training answers, "
                "%.1f %% exceed the largest (%d)\n",
                lengths.min_len, lengths.max_len, 100 * rare_fraction, 100.0 * beyond / test_samples,
                largest_trained);
    EXPECT_GT(rare_fraction, at_least_rare);
  }
}

}  // namespace
}  // namespace flashtrain::data

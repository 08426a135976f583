// State-tracking tasks on hand-worked examples: each answer below was worked
// out by hand from the task's definition in docs/TASKS.md.
#include <gtest/gtest.h>

#include "flashtrain/data/error.h"
#include "flashtrain/data/tasks.h"
#include "test_util.h"

namespace flashtrain::data {
namespace {

using testing::expect_error;

// The answer's name for inputs given as spaced token names.
std::string answer_of(Task task, const std::string& inputs, const TaskOptions& options = {}) {
  const Vocabulary v = task_vocabulary(task, options);
  return v.names.at(static_cast<std::size_t>(task_answer(task, options, v.ids(inputs))));
}

TEST(TaskExamples, Parity) {
  EXPECT_EQ(answer_of(Task::kParity, "1 0 1 1"), "1");  // three ones
  EXPECT_EQ(answer_of(Task::kParity, "1 0 0 1"), "0");
  EXPECT_EQ(answer_of(Task::kParity, "0"), "0");
  // Token ids as TASKS.md states them: answer = 1 + (number of 2s mod 2).
  EXPECT_EQ(task_answer(Task::kParity, {}, {2, 2, 2, 1}), 2);
  EXPECT_EQ(task_answer(Task::kParity, {}, {2, 1, 2}), 1);
}

TEST(TaskExamples, EvenPairs) {
  EXPECT_EQ(task_answer(Task::kEvenPairs, {}, {2, 1, 1, 2}), 1);  // first == last
  EXPECT_EQ(task_answer(Task::kEvenPairs, {}, {2, 2, 2, 1}), 2);
  EXPECT_EQ(task_answer(Task::kEvenPairs, {}, {1}), 1);
}

TEST(TaskExamples, CycleNavigation) {
  EXPECT_EQ(answer_of(Task::kCycleNavigation, "+1 +1 -1 stay +1"), "p2");
  EXPECT_EQ(answer_of(Task::kCycleNavigation, "-1"), "p4");  // wraps below 0
  EXPECT_EQ(answer_of(Task::kCycleNavigation, "+1 +1 +1 +1 +1 +1"), "p1");
  EXPECT_EQ(answer_of(Task::kCycleNavigation, "stay stay"), "p0");
}

TEST(TaskExamples, ModularArithmetic) {
  EXPECT_EQ(answer_of(Task::kModularArithmetic, "3 + 4 * 2 - 1 ="), "0");  // 3+8-1 = 10
  EXPECT_EQ(answer_of(Task::kModularArithmetic, "2 * 3 * 4 ="), "4");      // 24
  EXPECT_EQ(answer_of(Task::kModularArithmetic, "1 - 4 ="), "2");          // -3
  EXPECT_EQ(answer_of(Task::kModularArithmetic, "4 - 2 * 3 + 1 ="), "4");  // -1
  EXPECT_EQ(answer_of(Task::kModularArithmetic, "2 - 3 - 4 ="), "0");      // left to right: -5
  EXPECT_EQ(answer_of(Task::kModularArithmetic, "3 ="), "3");
}

TEST(TaskExamples, ModularArithmeticBrackets) {
  EXPECT_EQ(answer_of(Task::kModularArithmeticBrackets, "( 3 + ( - 4 ) ) ="), "4");          // -1
  EXPECT_EQ(answer_of(Task::kModularArithmeticBrackets, "( ( 1 - 3 ) * ( 2 + 2 ) ) ="), "2");  // -8
  EXPECT_EQ(answer_of(Task::kModularArithmeticBrackets, "( 4 - - 2 ) ="), "1");               // 6
  EXPECT_EQ(answer_of(Task::kModularArithmeticBrackets, "- 3 ="), "2");
  EXPECT_EQ(answer_of(Task::kModularArithmeticBrackets, "( 2 ) ="), "2");
}

TEST(TaskExamples, MalformedExpressionsNameThePosition) {
  const Vocabulary v = task_vocabulary(Task::kModularArithmetic);
  expect_error<DataError>([&] { task_answer(Task::kModularArithmetic, {}, v.ids("3 + =")); },
                          {"expected a digit, '-' or '(' at position 2", "the end"});
  expect_error<DataError>([&] { task_answer(Task::kModularArithmetic, {}, v.ids("( 3 + 1 =")); },
                          {"expected ')' at position 4"});
  expect_error<DataError>([&] { task_answer(Task::kModularArithmetic, {}, v.ids("3 + 1")); },
                          {"must end with '='"});
  expect_error<DataError>([&] { task_answer(Task::kModularArithmetic, {}, v.ids("3 4 =")); },
                          {"at position 1", "token 5"});
}

TEST(TaskExamples, MajorityAndMajorityCount) {
  EXPECT_EQ(answer_of(Task::kMajority, "1 7 7 3 7 1"), "7");
  EXPECT_EQ(answer_of(Task::kMajorityCount, "1 7 7 3 7 1"), "3");  // 7 three times: the symbol of value 3
  EXPECT_EQ(answer_of(Task::kMajorityCount, "63"), "1");
  EXPECT_EQ(answer_of(Task::kMajority, "1 7 6 4 4 8 1 7 2 4"), "4");
  expect_error<DataError>([] { task_answer(Task::kMajority, {}, {1, 2}); }, {"tie"});
  expect_error<DataError>([] { task_answer(Task::kMajority, {}, {1, 64}); },
                          {"token 64 at position 1", "1..63"});
  // A count above the alphabet is written as its highest symbol.
  TaskOptions three;
  three.majority_alphabet = 3;
  EXPECT_EQ(answer_of(Task::kMajorityCount, "2 2 2 2 1", three), "3");
  EXPECT_EQ(answer_of(Task::kMajorityCount, "2 2 1", three), "2");
}

TEST(TaskExamples, SolveEquation) {
  const auto x_of = [](const std::string& equation) {
    return answer_of(Task::kSolveEquation, equation);
  };
  EXPECT_EQ(x_of("x = 3"), "3");
  EXPECT_EQ(x_of("- x = 3"), "2");                      // -2 = 3 mod 5
  EXPECT_EQ(x_of("( x + 4 ) = 1"), "2");                // 2 + 4 = 6
  EXPECT_EQ(x_of("( 3 - ( - x ) ) = 0"), "2");          // 3 + x = 5
  EXPECT_EQ(x_of("( ( 1 - x ) + ( 2 - 4 ) ) = 2"), "2");  // -1 - x = 2: x = -3
  const Vocabulary v = task_vocabulary(Task::kSolveEquation);
  EXPECT_EQ(v.num_classes(), 5);
  EXPECT_EQ(v.id("x"), 12);
  expect_error<DataError>([&] { task_answer(Task::kSolveEquation, {}, v.ids("( x * 0 ) = 0")); },
                          {"position 2", "'*' can leave x free"});
  expect_error<DataError>([&] { task_answer(Task::kSolveEquation, {}, v.ids("( x + x ) = 0")); }, {"not 2 times"});
  expect_error<DataError>([&] { task_answer(Task::kSolveEquation, {}, v.ids("( 1 + 2 ) = 3")); }, {"not 0 times"});
  expect_error<DataError>([&] { task_answer(Task::kSolveEquation, {}, v.ids("x + 1 =")); }, {"end with '='"});
}

TEST(TaskExamples, S5RunningProduct) {
  const Vocabulary v = task_vocabulary(Task::kS5);
  EXPECT_EQ(v.names[0], "01234");  // identity first, then lexicographic
  EXPECT_EQ(v.names[1], "01243");
  EXPECT_EQ(v.names[24], "10234");
  EXPECT_EQ(v.names[119], "43210");
  // x0 swaps 0 and 1; x1 is the 3-cycle 0->1->2->0. p1(i) = x1(x0(i)):
  // 0 -> 1 -> 2, 1 -> 0 -> 1, 2 -> 2 -> 0, so p1 = 21034. Then x0 again:
  // p2(i) = x0(p1(i)) = 20134.
  EXPECT_EQ(v.render(task_targets(Task::kS5, v.ids("10234 12034 10234"))), "10234 21034 20134");
  // A permutation followed by its inverse gives the identity.
  EXPECT_EQ(v.render(task_targets(Task::kS5, v.ids("12034 20134"))), "12034 01234");
}

TEST(TaskExamples, Z60RunningSum) {
  EXPECT_EQ(task_targets(Task::kZ60, {59, 2, 30, 29}), (std::vector<std::int32_t>{59, 1, 31, 0}));
  expect_error<DataError>([] { task_targets(Task::kZ60, {1, 60}); }, {"token 60 at position 1"});
}

TEST(TaskExamples, VocabulariesAndClasses) {
  EXPECT_EQ(task_vocabulary(Task::kParity).num_classes(), 2);
  EXPECT_EQ(task_vocabulary(Task::kEvenPairs).num_classes(), 2);
  EXPECT_EQ(task_vocabulary(Task::kCycleNavigation).num_classes(), 5);
  EXPECT_EQ(task_vocabulary(Task::kModularArithmetic).num_classes(), 5);
  EXPECT_EQ(task_vocabulary(Task::kModularArithmeticBrackets).size(), 12);
  EXPECT_EQ(task_vocabulary(Task::kMajority).size(), 64);  // the xLSTM paper's vocabulary of 64
  EXPECT_EQ(task_vocabulary(Task::kMajorityCount).num_classes(), 63);
  TaskOptions options;
  options.majority_alphabet = 3;
  EXPECT_EQ(task_vocabulary(Task::kMajority, options).num_classes(), 3);
  EXPECT_EQ(task_vocabulary(Task::kMajorityCount, options).num_classes(), 3);  // counts 1..3, 3 = "3 or more"
  EXPECT_EQ(task_vocabulary(Task::kBucketSort).num_classes(), 5);
  EXPECT_EQ(task_vocabulary(Task::kMissingDuplicate).num_classes(), 2);
  EXPECT_EQ(task_vocabulary(Task::kS5).num_classes(), 120);
  EXPECT_EQ(task_vocabulary(Task::kS5).pad_id, 120);
  EXPECT_EQ(task_vocabulary(Task::kZ60).pad_id, 60);
  for (const Task task : all_tasks()) {
    EXPECT_EQ(parse_task(to_string(task)), task);
    const Vocabulary v = task_vocabulary(task);
    EXPECT_EQ(v.names[static_cast<std::size_t>(v.pad_id)], "<pad>") << to_string(task);
  }
  expect_error<std::invalid_argument>([] { parse_task("parity2"); },
                                      {"unknown task 'parity2'", "even_pairs", "z60"});
}

}  // namespace
}  // namespace flashtrain::data

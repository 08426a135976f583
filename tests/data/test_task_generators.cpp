// State-tracking generators on 10,000 samples each: answers recomputed by
// evaluators written here independently of the library (different methods:
// a shunting-yard parser, explicit permutation application, ...), the length
// distribution, the shape of every sequence, and determinism.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "flashtrain/data/tasks.h"
#include "test_util.h"

namespace flashtrain::data {
namespace {

constexpr int kSamples = 10000;
constexpr std::uint64_t kSeed = 20240520;

std::vector<TaskSample> draw(const TaskSpec& spec, std::uint64_t seed = kSeed) {
  std::vector<TaskSample> samples;
  samples.reserve(kSamples);
  for (int i = 0; i < kSamples; ++i) samples.push_back(generate_sample(spec, seed, static_cast<std::uint64_t>(i)));
  return samples;
}

std::vector<std::int32_t> inputs_of(const TaskSample& s) {
  return {s.tokens.begin(), s.tokens.end() - 1};
}

// ---- independent evaluators ---------------------------------------------------

// Modular arithmetic over the rendered text ("3+4*2-1="): shunting-yard to
// postfix, then a stack machine. Unary minus is recognised where an operand
// is expected and binds tighter than '*'. Exact integers, reduced mod 5 at
// the end (values are kept small by reducing each intermediate result, which
// mod 5 arithmetic allows).
int shunting_yard_mod5(const std::string& text) {
  auto precedence = [](char op) { return op == '~' ? 3 : op == '*' ? 2 : 1; };
  std::vector<char> ops, postfix_ops;
  std::vector<std::string> postfix;
  bool expect_operand = true;
  for (const char c : text) {
    if (c == '=') break;
    if (c >= '0' && c <= '4') {
      postfix.emplace_back(1, c);
      expect_operand = false;
    } else if (c == '(') {
      ops.push_back(c);
      expect_operand = true;
    } else if (c == ')') {
      while (ops.back() != '(') { postfix.emplace_back(1, ops.back()); ops.pop_back(); }
      ops.pop_back();
      expect_operand = false;
    } else if (c == '-' && expect_operand) {
      ops.push_back('~');  // unary minus: right-associative, pops nothing
    } else {
      while (!ops.empty() && ops.back() != '(' && precedence(ops.back()) >= precedence(c)) {
        postfix.emplace_back(1, ops.back());
        ops.pop_back();
      }
      ops.push_back(c);
      expect_operand = true;
    }
  }
  while (!ops.empty()) { postfix.emplace_back(1, ops.back()); ops.pop_back(); }
  std::vector<long> stack;
  for (const std::string& item : postfix) {
    const char c = item[0];
    if (c >= '0' && c <= '4') { stack.push_back(c - '0'); continue; }
    if (c == '~') { stack.back() = -stack.back(); continue; }
    const long b = stack.back(); stack.pop_back();
    const long a = stack.back(); stack.pop_back();
    const long r = c == '+' ? a + b : c == '-' ? a - b : a * b;
    stack.push_back(r % 5);
  }
  EXPECT_EQ(stack.size(), 1u) << text;
  return static_cast<int>(((stack.back() % 5) + 5) % 5);
}

// Lexicographic rank of a permutation by its Lehmer code.
int lehmer_rank(const std::array<int, 5>& p) {
  static const int factorial[5] = {24, 6, 2, 1, 1};
  int rank = 0;
  for (int i = 0; i < 5; ++i) {
    int smaller_later = 0;
    for (int j = i + 1; j < 5; ++j) smaller_later += p[j] < p[i];
    rank += smaller_later * factorial[i];
  }
  return rank;
}

// The permutation of a vocabulary name such as "21034".
std::array<int, 5> parse_permutation(const std::string& name) {
  std::array<int, 5> p{};
  for (int i = 0; i < 5; ++i) p[i] = name[static_cast<std::size_t>(i)] - '0';
  return p;
}

// ---- answers ------------------------------------------------------------------

TEST(TaskGenerators, ParityAgreesWithACount) {
  int odd = 0;
  for (const TaskSample& s : draw({Task::kParity, {}, {3, 40}})) {
    const auto in = inputs_of(s);
    ASSERT_TRUE(std::all_of(in.begin(), in.end(), [](int t) { return t == 1 || t == 2; }));
    const long twos = std::count(in.begin(), in.end(), 2);
    ASSERT_EQ(s.tokens.back(), twos % 2 == 0 ? 1 : 2);
    odd += twos % 2;
  }
  // Uniform bits make both answers equally likely: 5000 +- 50 (1 sd), allow 5 sd.
  EXPECT_NEAR(odd, kSamples / 2, 250);
}

TEST(TaskGenerators, EvenPairsAgreesWithFirstAndLastBit) {
  for (const TaskSample& s : draw({Task::kEvenPairs, {}, {3, 40}})) {
    const auto in = inputs_of(s);
    ASSERT_EQ(s.tokens.back(), in.front() == in.back() ? 1 : 2);
  }
}

TEST(TaskGenerators, CycleNavigationAgreesWithNetSteps) {
  std::set<std::int32_t> answers;
  for (const TaskSample& s : draw({Task::kCycleNavigation, {}, {3, 40}})) {
    const auto in = inputs_of(s);
    const long net = std::count(in.begin(), in.end(), 2) - std::count(in.begin(), in.end(), 3);
    ASSERT_EQ(std::count(in.begin(), in.end(), 1) + std::count(in.begin(), in.end(), 2) +
                  std::count(in.begin(), in.end(), 3),
              static_cast<long>(in.size()));
    ASSERT_EQ(s.tokens.back(), 4 + ((net % 5) + 5) % 5);
    answers.insert(s.tokens.back());
  }
  EXPECT_EQ(answers.size(), 5u);
}

TEST(TaskGenerators, ModularArithmeticAgreesWithShuntingYard) {
  const TaskSpec spec{Task::kModularArithmetic, {}, {3, 40}};
  const Vocabulary v = task_vocabulary(spec.task);
  for (const TaskSample& s : draw(spec)) {
    const std::string text = v.render(s.tokens, "");
    const std::size_t n = s.tokens.size();
    ASSERT_EQ(n % 2, 1u) << text;
    // d op d op ... d = answer
    for (std::size_t i = 0; i + 2 < n; ++i) {
      const char c = text[i];
      ASSERT_TRUE(i % 2 == 0 ? (c >= '0' && c <= '4') : (c == '+' || c == '-' || c == '*')) << text;
    }
    ASSERT_EQ(text[n - 2], '=') << text;
    ASSERT_EQ(s.tokens.back(), 1 + shunting_yard_mod5(text)) << text;
  }
}

void check_bracketed(const TaskSpec& spec, bool expect_multiplication) {
  const Vocabulary v = task_vocabulary(spec.task, spec.options);
  bool saw_multiplication = false;
  for (const TaskSample& s : draw(spec)) {
    const std::string text = v.render(s.tokens, "");
    const std::size_t n = s.tokens.size();
    ASSERT_EQ(text[n - 2], '=') << text;
    int depth = 0;
    for (std::size_t i = 0; i + 2 < n; ++i) {
      depth += text[i] == '(' ? 1 : text[i] == ')' ? -1 : 0;
      ASSERT_GE(depth, 0) << text;
      // Every bracket pair in the grammar encloses the whole expression
      // built at that level, so depth returns to 0 only at the very end.
      if (n - 2 > 2) {
        ASSERT_TRUE(depth > 0 || i == n - 3) << text;
      }
      saw_multiplication |= text[i] == '*';
    }
    ASSERT_EQ(depth, 0) << text;
    ASSERT_EQ(s.tokens.back(), 1 + shunting_yard_mod5(text)) << text;
  }
  EXPECT_EQ(saw_multiplication, expect_multiplication);
}

TEST(TaskGenerators, ModularArithmeticBracketsAgreesWithShuntingYard) {
  check_bracketed({Task::kModularArithmeticBrackets, {}, {3, 40}}, true);  // '*' by default, as Delétang et al.
  TaskOptions without_times;
  without_times.brackets_multiplication = false;
  check_bracketed({Task::kModularArithmeticBrackets, without_times, {3, 40}}, false);
}

// The answer put in place of x gives the equation's right-hand side; x occurs
// once, in a bracketed expression over + and - of the drawn length.
TEST(TaskGenerators, SolveEquationAnswersSatisfyTheEquation) {
  const Vocabulary v = task_vocabulary(Task::kSolveEquation);
  for (const TaskSample& s : draw({Task::kSolveEquation, {}, {4, 40}})) {
    std::string text = v.render({s.tokens.begin(), s.tokens.end() - 1}, "");  // "expr=v"
    ASSERT_EQ(std::count(text.begin(), text.end(), 'x'), 1) << text;
    ASSERT_EQ(text.find('*'), std::string::npos) << text;
    const char x = v.names[std::size_t(s.tokens.back())][0];
    std::replace(text.begin(), text.end(), 'x', x);
    ASSERT_EQ(text[text.size() - 2], '=') << text;
    ASSERT_EQ(shunting_yard_mod5(text), text.back() - '0') << text;
  }
}

TEST(TaskGenerators, BracketedExpressionsOfTheSmallLengths) {
  // Expression lengths 1..4 (sequence lengths 3..6) have fixed shapes.
  const Vocabulary v = task_vocabulary(Task::kModularArithmeticBrackets);
  const std::array<std::string, 4> shapes = {"d", "-d", "(d)", "(-d)"};
  for (int length = 3; length <= 6; ++length) {
    for (std::uint64_t i = 0; i < 50; ++i) {
      const TaskSample s = generate_sample({Task::kModularArithmeticBrackets, {}, {length, length}}, 1, i);
      std::string shape = v.render({s.tokens.begin(), s.tokens.end() - 2}, "");
      for (char& c : shape) if (c >= '0' && c <= '4') c = 'd';
      ASSERT_EQ(shape, shapes[static_cast<std::size_t>(length - 3)]);
    }
  }
}

TEST(TaskGenerators, MajorityAgreesWithAHistogramAndHasNoTies) {
  TaskOptions options;
  options.majority_alphabet = 3;
  const auto majority = draw({Task::kMajority, options, {3, 40}});
  const auto counts = draw({Task::kMajorityCount, options, {3, 40}});
  for (int k = 0; k < kSamples; ++k) {
    for (const bool count_task : {false, true}) {
      const TaskSample& s = count_task ? counts[static_cast<std::size_t>(k)] : majority[static_cast<std::size_t>(k)];
      std::map<std::int32_t, int> histogram;
      for (const auto t : inputs_of(s)) {
        ASSERT_TRUE(t >= 1 && t <= 3);
        ++histogram[t];
      }
      std::vector<std::pair<int, std::int32_t>> by_count;
      for (const auto& [symbol, c] : histogram) by_count.emplace_back(c, symbol);
      std::sort(by_count.rbegin(), by_count.rend());
      ASSERT_TRUE(by_count.size() == 1 || by_count[0].first > by_count[1].first) << "tie";
      ASSERT_EQ(s.tokens.back(), count_task ? std::min(by_count[0].first, 3) : by_count[0].second);
    }
  }
}

TEST(TaskGenerators, S5TargetsAgreeWithAppliedPermutations) {
  const Vocabulary v = task_vocabulary(Task::kS5);
  for (const TaskSample& s : draw({Task::kS5, {}, {1, 40}})) {
    ASSERT_EQ(s.targets.size(), s.tokens.size());
    // Track where each element goes when the permutations act in order.
    std::array<int, 5> where = {0, 1, 2, 3, 4};
    for (std::size_t t = 0; t < s.tokens.size(); ++t) {
      const auto x = parse_permutation(v.names[static_cast<std::size_t>(s.tokens[t])]);
      for (int& w : where) w = x[static_cast<std::size_t>(w)];
      ASSERT_EQ(s.targets[t], lehmer_rank(where));
    }
  }
}

TEST(TaskGenerators, Z60TargetsAreRunningSums) {
  for (const TaskSample& s : draw({Task::kZ60, {}, {1, 40}})) {
    long sum = 0;
    for (std::size_t t = 0; t < s.tokens.size(); ++t) {
      ASSERT_TRUE(s.tokens[t] >= 0 && s.tokens[t] < 60);
      sum += s.tokens[t];
      ASSERT_EQ(s.targets[t], sum % 60);
    }
  }
}

// ---- lengths ------------------------------------------------------------------

// Lengths are uniform over the allowed values: every value occurs, and the
// chi-square statistic stays below its p = 0.001 critical value.
void check_uniform_lengths(const TaskSpec& spec, int step) {
  std::map<int, int> histogram;
  for (const TaskSample& s : draw(spec)) ++histogram[static_cast<int>(s.tokens.size())];
  std::vector<int> allowed;
  for (int n = spec.lengths.min_len; n <= spec.lengths.max_len; ++n) {
    if (step == 1 || n % 2 == 1) allowed.push_back(n);
  }
  ASSERT_EQ(histogram.size(), allowed.size()) << to_string(spec.task);
  const double expected = static_cast<double>(kSamples) / allowed.size();
  double chi2 = 0;
  for (const int n : allowed) {
    ASSERT_TRUE(histogram.count(n)) << to_string(spec.task) << " never drew length " << n;
    chi2 += (histogram[n] - expected) * (histogram[n] - expected) / expected;
  }
  // Critical values for 37 and 18 degrees of freedom.
  EXPECT_LT(chi2, allowed.size() == 38 ? 69.35 : 42.31) << to_string(spec.task);
}

TEST(TaskGenerators, LengthsAreUniformOverTheRange) {
  // Odd lengths only: n inputs and '=' or the answer; n symbols, '|' and n outputs; a doubled string and its answer.
  const std::set<Task> odd = {Task::kModularArithmetic, Task::kBucketSort, Task::kMissingDuplicate};
  for (const Task task : all_tasks()) {
    if (odd.count(task)) {
      check_uniform_lengths({task, {}, {3, 40}}, 2);  // 19 odd lengths
    } else {
      const int shortest = std::max(3, task_min_length(task));
      check_uniform_lengths({task, {}, {shortest, shortest + 37}}, 1);  // 38 lengths
    }
  }
}

TEST(TaskGenerators, EvaluationLengthsReachTheContext) {
  for (const Task task : all_tasks()) {
    const TaskSpec spec{task, {}, {40, 256}};
    int longest = 0;
    for (std::uint64_t i = 0; i < 2000; ++i) {
      const int n = static_cast<int>(generate_sample(spec, 3, i).tokens.size());
      ASSERT_GE(n, 40);
      ASSERT_LE(n, 256);
      longest = std::max(longest, n);
    }
    EXPECT_GE(longest, 250) << to_string(task);
  }
}

TEST(TaskGenerators, BadLengthRangesAreClearErrors) {
  using testing::expect_error;
  expect_error<std::invalid_argument>([] { generate_sample({Task::kParity, {}, {1, 10}}, 0, 0); },
                                      {"parity", "min_len 1", "shortest sequence, 2"});
  expect_error<std::invalid_argument>([] { generate_sample({Task::kParity, {}, {10, 5}}, 0, 0); },
                                      {"max_len 5 < min_len 10"});
  expect_error<std::invalid_argument>([] { generate_sample({Task::kZ60, {}, {1, 300}}, 0, 0); },
                                      {"max_len 300 exceeds options.max_length 256"});
  expect_error<std::invalid_argument>(
      [] { generate_sample({Task::kModularArithmetic, {}, {8, 8}}, 0, 0); }, {"must be odd"});
}

// ---- determinism ---------------------------------------------------------------

TEST(TaskGenerators, SamplesArePureFunctionsOfTaskSeedAndIndex) {
  for (const Task task : all_tasks()) {
    const TaskSpec spec{task, {}, {std::max(3, task_min_length(task)), 40}};
    int same_as_other_seed = 0;
    for (std::uint64_t i = 0; i < 200; ++i) {
      const TaskSample a = generate_sample(spec, 7, i);
      const TaskSample b = generate_sample(spec, 7, i);
      ASSERT_EQ(a.tokens, b.tokens);
      ASSERT_EQ(a.targets, b.targets);
      same_as_other_seed += a.tokens == generate_sample(spec, 8, i).tokens;
    }
    EXPECT_LT(same_as_other_seed, 10) << to_string(task);
  }
  // Different tasks with the same seed and index draw from different streams.
  const auto parity = generate_sample({Task::kParity, {}, {40, 40}}, 1, 0).tokens;
  const auto even = generate_sample({Task::kEvenPairs, {}, {40, 40}}, 1, 0).tokens;
  EXPECT_FALSE(std::equal(parity.begin(), parity.end() - 1, even.begin()));
}

}  // namespace
}  // namespace flashtrain::data

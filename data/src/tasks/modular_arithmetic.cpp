// Modular arithmetic mod 5, without and with brackets, and the equations over
// it. All share one vocabulary: digits 0..4 are tokens 1..5, then + - * = ( )
// are 6..11; the equations add the unknown x, 12. Modular arithmetic: the inputs end with
// '='; the answer is the digit token of the value mod 5. Solve equation (after
// Delétang et al. 2023): a bracketed expression over + and - in which one
// digit is x, '=', its value; the answer is x. x appears once under + and -
// only, so the value is +-x + c and every equation has one solution (with '*'
// a factor 0 would leave x free, which is why Delétang et al.'s generator
// leaves '*' out).
#include <string>

#include "task_definition.h"

namespace flashtrain::data::tasks {
namespace {

constexpr int kModulus = 5;
constexpr std::int32_t kDigit0 = 1;
constexpr std::int32_t kPlus = 6;
constexpr std::int32_t kMinus = 7;
constexpr std::int32_t kTimes = 8;
constexpr std::int32_t kEquals = 9;
constexpr std::int32_t kOpen = 10;
constexpr std::int32_t kClose = 11;
constexpr std::int32_t kUnknown = 12;
// Deeper nesting than any generated expression of a sane length; it keeps a
// hostile input from overflowing the parser's stack.
constexpr int kMaxNesting = 100000;

Vocabulary vocabulary(const TaskOptions&) {
  Vocabulary v{{"<pad>"}, 0, {}};
  for (int d = 0; d < kModulus; ++d) {
    v.names.push_back(std::to_string(d));
    v.classes.push_back(kDigit0 + d);
  }
  for (const char* symbol : {"+", "-", "*", "=", "(", ")"}) v.names.push_back(symbol);
  return v;
}

Vocabulary equation_vocabulary(const TaskOptions& options) {
  Vocabulary v = vocabulary(options);
  v.names.push_back("x");
  return v;
}

std::int32_t digit_token(std::uint64_t d) { return kDigit0 + static_cast<std::int32_t>(d); }
bool is_digit(std::int32_t t) { return t >= kDigit0 && t < kDigit0 + kModulus; }

// Recursive descent with the usual precedence, all values kept in [0, 5):
//   expression := term (('+' | '-') term)*
//   term       := unary ('*' unary)*
//   unary      := '-' unary | primary
//   primary    := digit | '(' expression ')'   (x: the value `unknown` stands for)
class Evaluator {
 public:
  explicit Evaluator(const Tokens& tokens, int unknown = -1) : t_(tokens), unknown_(unknown) {}

  int evaluate() {
    if (t_.empty() || t_.back() != kEquals) {
      throw DataError("modular_arithmetic: the inputs must end with '=' (token 9)");
    }
    const int value = expression();
    if (pos_ != t_.size() - 1) throw unexpected("'+', '-', '*' or '='");
    return value;
  }

 private:
  int expression() {
    int value = term();
    while (peek() == kPlus || peek() == kMinus) {
      const bool plus = t_[pos_++] == kPlus;
      const int rhs = term();
      value = plus ? (value + rhs) % kModulus : (value - rhs + kModulus) % kModulus;
    }
    return value;
  }

  int term() {
    int value = unary();
    while (peek() == kTimes) {
      ++pos_;
      value = value * unary() % kModulus;
    }
    return value;
  }

  int unary() {
    if (peek() == kMinus) {
      ++pos_;
      return (kModulus - unary()) % kModulus;
    }
    return primary();
  }

  int primary() {
    const std::int32_t t = peek();
    if (is_digit(t)) {
      ++pos_;
      return t - kDigit0;
    }
    if (t == kUnknown && unknown_ >= 0) {
      ++pos_;
      return unknown_;
    }
    if (t != kOpen) throw unexpected("a digit, '-' or '('");
    if (++depth_ > kMaxNesting) throw DataError("modular_arithmetic: brackets nested too deeply");
    ++pos_;
    const int value = expression();
    if (peek() != kClose) throw unexpected("')'");
    ++pos_;
    --depth_;
    return value;
  }

  // The '=' at the end acts as the end of input.
  std::int32_t peek() const { return pos_ < t_.size() - 1 ? t_[pos_] : kEquals; }

  DataError unexpected(std::string_view expected) const {
    const bool at_end = pos_ >= t_.size() - 1;
    return DataError("modular_arithmetic: expected " + std::string(expected) + " at position " +
                     std::to_string(pos_) + ", found " +
                     (at_end ? std::string("the end ('=')") : "token " + std::to_string(t_[pos_])));
  }

  const Tokens& t_;
  const int unknown_;  // < 0: no x allowed
  std::size_t pos_ = 0;
  int depth_ = 0;
};

std::int32_t answer(const Tokens& inputs, const TaskOptions&) {
  return digit_token(static_cast<std::uint64_t>(Evaluator(inputs).evaluate()));
}

// d op d op ... d =, with length - 2 (odd) expression tokens.
Tokens draw_flat(Rng& rng, int length, const TaskOptions&) {
  const int expression_length = length - 2;
  Tokens t;
  t.reserve(static_cast<std::size_t>(length - 1));
  for (int i = 0; i < expression_length; ++i) {
    t.push_back(i % 2 == 0 ? digit_token(rng.below(kModulus))
                           : kPlus + static_cast<std::int32_t>(rng.below(3)));
  }
  t.push_back(kEquals);
  return t;
}

// A fully bracketed expression of exactly `length` tokens (TASKS.md):
// 1: d   2: -d   3: (d)   4: (-d)   >=5: ( left op right ), split uniform.
void draw_bracketed(Rng& rng, int length, bool multiplication, Tokens& out) {
  switch (length) {
    case 1: out.push_back(digit_token(rng.below(kModulus))); return;
    case 2: out.insert(out.end(), {kMinus, digit_token(rng.below(kModulus))}); return;
    case 3: out.insert(out.end(), {kOpen, digit_token(rng.below(kModulus)), kClose}); return;
    case 4: out.insert(out.end(), {kOpen, kMinus, digit_token(rng.below(kModulus)), kClose}); return;
    default: break;
  }
  const int left = static_cast<int>(rng.between(1, length - 4));
  const int right = length - 3 - left;
  const std::int32_t op = kPlus + static_cast<std::int32_t>(rng.below(multiplication ? 3 : 2));
  out.push_back(kOpen);
  draw_bracketed(rng, left, multiplication, out);
  out.push_back(op);
  draw_bracketed(rng, right, multiplication, out);
  out.push_back(kClose);
}

Tokens draw_brackets(Rng& rng, int length, const TaskOptions& options) {
  Tokens t;
  t.reserve(static_cast<std::size_t>(length - 1));
  draw_bracketed(rng, length - 2, options.brackets_multiplication, t);
  t.push_back(kEquals);
  return t;
}

// An expression of length - 3 tokens over + and -, one of its digits (the
// first at or after a uniform position) replaced by x, then '=' and its value.
Tokens draw_equation(Rng& rng, int length, const TaskOptions&) {
  Tokens t;
  t.reserve(static_cast<std::size_t>(length - 1));
  draw_bracketed(rng, length - 3, /*multiplication=*/false, t);
  t.push_back(kEquals);
  const int value = Evaluator(t).evaluate();
  std::size_t x = static_cast<std::size_t>(rng.below(t.size() - 1));
  while (!is_digit(t[x])) x = (x + 1) % (t.size() - 1);
  t[x] = kUnknown;
  t.push_back(digit_token(static_cast<std::uint64_t>(value)));
  return t;
}

// The x of "expression = v": the digit d for which the expression is v. The
// inputs must hold x once and no '*' (then exactly one d fits).
std::int32_t solve(const Tokens& inputs, const TaskOptions&) {
  if (inputs.size() < 3 || inputs[inputs.size() - 2] != kEquals || !is_digit(inputs.back()))
    throw DataError("solve_equation: the inputs must end with '=' (token 9) and a digit");
  std::size_t unknowns = 0;
  for (std::size_t i = 0; i + 2 < inputs.size(); ++i) {
    if (inputs[i] == kTimes) throw bad_token("solve_equation", inputs[i], i, "'+' or '-' ('*' can leave x free)");
    unknowns += inputs[i] == kUnknown;
  }
  if (unknowns != 1)
    throw DataError("solve_equation: the expression must hold x (token 12) once, not " + std::to_string(unknowns) +
                    " times");
  const Tokens expression(inputs.begin(), inputs.end() - 1);  // up to '='
  const int wanted = inputs.back() - kDigit0;
  for (int d = 0; d < kModulus; ++d) {
    if (Evaluator(expression, d).evaluate() == wanted) return digit_token(static_cast<std::uint64_t>(d));
  }
  throw std::logic_error("solve_equation: no digit solves the equation");  // +-x + c takes every value
}

}  // namespace

const TaskDefinition& modular_arithmetic_task() {
  static const TaskDefinition task{Task::kModularArithmetic, "modular_arithmetic",
                                   TaskFormat::kAnswerLast, 3, true, vocabulary, draw_flat,
                                   answer, nullptr};
  return task;
}

const TaskDefinition& modular_arithmetic_brackets_task() {
  static const TaskDefinition task{Task::kModularArithmeticBrackets, "modular_arithmetic_brackets",
                                   TaskFormat::kAnswerLast, 3, false, vocabulary, draw_brackets,
                                   answer, nullptr};
  return task;
}

const TaskDefinition& solve_equation_task() {
  static const TaskDefinition task{Task::kSolveEquation, "solve_equation", TaskFormat::kAnswerLast, 4, false,
                                   equation_vocabulary, draw_equation, solve, nullptr};
  return task;
}

}  // namespace flashtrain::data::tasks

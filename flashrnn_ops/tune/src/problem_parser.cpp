// Recursive descent over the tokens of one statement per line.
#include "flashrnn/tune/problem_parser.h"

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "lexer.h"

namespace flashrnn::tune {

ParseError::ParseError(std::string file, int line, int column, const std::string& message)
    : ProblemError(file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " +
                   message),
      file_(std::move(file)), line_(line), column_(column), message_(message) {}

namespace {

using detail::Token;

constexpr std::string_view kKeywords[] = {"var",       "param",      "in",       "multiple",
                                          "of",        "power",      "ascending", "descending",
                                          "order",     "minimize",   "maximize"};

bool is_keyword(std::string_view name) {
  return std::find(std::begin(kKeywords), std::end(kKeywords), name) != std::end(kKeywords);
}

// Edit distance, for "did you mean" hints.
size_t distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::string quoted(const Token& t) {
  switch (t.kind) {
    case Token::Kind::kEndOfLine: return "the end of the line";
    case Token::Kind::kEndOfText: return "the end of the text";
    default: return "'" + t.text + "'";
  }
}

// An expression and, when it was written `a % b`, the divisor b.
struct Term {
  Expr value;
  std::optional<Expr> divisor;
  const Token* percent = nullptr;  // where the % was
};

class Parser {
 public:
  Parser(std::string_view text, std::string file)
      : file_(std::move(file)), tokens_(detail::tokenize(text, file_)) {}

  Problem parse() {
    while (peek().kind != Token::Kind::kEndOfText) {
      if (!peek().ends_statement()) statement_at_its_position();
      if (peek().kind == Token::Kind::kEndOfLine) ++pos_;
    }
    if (!order_.empty()) problem_.set_search_order(order_);
    return std::move(problem_);
  }

 private:
  const Token& peek(size_t ahead = 0) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  const Token& next() {
    const Token& t = peek();
    if (t.kind != Token::Kind::kEndOfText) ++pos_;
    return t;
  }
  [[noreturn]] void fail(const Token& at, const std::string& message) const {
    throw ParseError(file_, at.line, at.column, message);
  }
  const Token& expect(std::string_view symbol, const char* context) {
    if (!peek().is(symbol))
      fail(peek(), "expected '" + std::string(symbol) + "' " + context + ", found " + quoted(peek()));
    return next();
  }
  void expect_end_of_statement() {
    if (!peek().ends_statement())
      fail(peek(), "unexpected " + quoted(peek()) + "; one statement per line");
  }

  // Errors of the problem itself (say, a domain value out of range) get the
  // position of the statement that caused them.
  void statement_at_its_position() {
    const Token& start = peek();
    try {
      statement();
    } catch (const ParseError&) {
      throw;
    } catch (const ProblemError& e) {
      fail(start, e.what());
    }
  }

  void statement() {
    const Token& first = peek();
    if (first.is("var")) return variable();
    if (first.is("param")) return parameter();
    if (first.is("order")) return order();
    if (first.is("minimize") || first.is("maximize")) return objective();
    if (first.kind == Token::Kind::kName && peek(1).is(":")) {
      if (is_keyword(first.text)) fail(first, "'" + first.text + "' is a keyword, not a label");
      for (const Constraint& c : problem_.constraints())
        if (c.label == first.text)
          fail(first, "label '" + first.text + "' is used twice (first at line " +
                          std::to_string(c.line) + ")");
      pos_ += 2;
      return constraint(first.text, first);
    }
    return constraint("", first);
  }

  const Token& new_name(const char* what) {
    const Token& t = next();
    if (t.kind != Token::Kind::kName) fail(t, std::string("expected the name of the ") + what +
                                                  ", found " + quoted(t));
    if (is_keyword(t.text)) fail(t, "'" + t.text + "' is a keyword and cannot name a " + what);
    if (int i = problem_.find(t.text); i >= 0)
      fail(t, "'" + t.text + "' is already declared at line " +
                  std::to_string(problem_.variables()[i].line));
    return t;
  }

  int64_t integer(const char* context) {
    const bool negative = peek().is("-");
    if (negative) next();
    const Token& t = next();
    if (t.kind != Token::Kind::kInteger)
      fail(t, std::string("expected an integer ") + context + ", found " + quoted(t));
    return negative ? -t.value : t.value;
  }

  // var NAME in DOMAIN [ascending | descending]
  void variable() {
    const Token& keyword = next();
    const Token& name = new_name("variable");
    expect("in", "before the domain");
    const Token& domain_start = peek();
    Domain domain = parse_domain();
    if (domain.empty())
      fail(domain_start, "the domain of '" + name.text + "' has no values");
    ValueOrder order = ValueOrder::kAscending;
    if (peek().is("ascending") || peek().is("descending"))
      order = next().is("descending") ? ValueOrder::kDescending : ValueOrder::kAscending;
    expect_end_of_statement();
    problem_.add_variable(name.text, std::move(domain), order, keyword.line);
  }

  // lo..hi [multiple of m | power of 2] or {v, v, ...}
  Domain parse_domain() {
    if (peek().is("{")) {
      next();
      std::vector<int64_t> values;
      if (peek().is("}")) fail(peek(), "a value set needs at least one value");
      values.push_back(integer("in the value set"));
      while (peek().is(",")) {
        next();
        values.push_back(integer("in the value set"));
      }
      expect("}", "to close the value set");
      return Domain::values(std::move(values));
    }
    const Token& lo_token = peek();
    const int64_t lo = integer("(a domain is lo..hi or {values})");
    expect("..", "between the bounds of the domain");
    const int64_t hi = integer("as the upper bound of the domain");
    if (lo > hi) fail(lo_token, "the domain " + std::to_string(lo) + ".." + std::to_string(hi) +
                                    " is empty (lower bound above upper bound)");
    if (peek().is("multiple")) {
      next();
      expect("of", "after 'multiple'");
      const Token& step_token = peek();
      const int64_t step = integer("after 'multiple of'");
      if (step <= 0) fail(step_token, "'multiple of' needs a positive number");
      return Domain::multiples_of(step, lo, hi);
    }
    if (peek().is("power")) {
      next();
      expect("of", "after 'power'");
      const Token& base = peek();
      if (integer("after 'power of'") != 2) fail(base, "only 'power of 2' is supported");
      return Domain::powers_of_two(lo, hi);
    }
    return Domain::interval(lo, hi);
  }

  // param NAME [= value]
  void parameter() {
    const Token& keyword = next();
    const Token& name = new_name("parameter");
    std::optional<int64_t> value;
    if (peek().is("=")) {
      next();
      value = integer("as the parameter's default value");
    }
    expect_end_of_statement();
    problem_.add_parameter(name.text, value, keyword.line);
  }

  // order NAME, NAME, ...
  void order() {
    const Token& keyword = next();
    if (!order_.empty()) fail(keyword, "the search order is given twice (first at line " +
                                           std::to_string(order_line_) + ")");
    order_line_ = keyword.line;
    do {
      if (!order_.empty()) next();  // the comma
      const Token& name = next();
      const int i = known_variable(name);
      if (std::find(order_.begin(), order_.end(), i) != order_.end())
        fail(name, "'" + name.text + "' is listed twice in the search order");
      order_.push_back(i);
    } while (peek().is(","));
    expect_end_of_statement();
  }

  // minimize EXPR | maximize EXPR
  void objective() {
    const Token& keyword = next();
    if (objective_line_)
      fail(keyword, "a second objective (the first is at line " + std::to_string(objective_line_) + ")");
    objective_line_ = keyword.line;
    Expr e = expression();
    expect_end_of_statement();
    problem_.set_objective(e, keyword.is("minimize") ? Goal::kMinimize : Goal::kMaximize);
  }

  // [label:] EXPR (== | <= | >= | < | >) EXPR, or [label:] A % B == 0
  void constraint(const std::string& label, const Token& start) {
    if (start.kind == Token::Kind::kName && is_keyword(start.text))
      fail(start, "'" + start.text + "' cannot start a statement here");
    Term lhs = sum(true);
    const Token& relation = next();
    static constexpr std::string_view kRelations[] = {"==", "<=", ">=", "<", ">"};
    if (std::none_of(std::begin(kRelations), std::end(kRelations),
                     [&](std::string_view r) { return relation.is(r); }))
      fail(relation, "expected a comparison (==, <=, >=, <, >), found " + quoted(relation));
    if (lhs.divisor) {
      const Token& zero = peek();
      if (!relation.is("==") || zero.kind != Token::Kind::kInteger || zero.value != 0 ||
          !peek(1).ends_statement())
        fail(*lhs.percent, "a divisibility constraint reads 'a % b == 0'");
      next();
      problem_.add_constraint(lhs.value, Relation::kDivisible, *lhs.divisor, label, start.line);
      return;
    }
    Expr rhs = expression();
    expect_end_of_statement();
    const Expr one = Expr::constant(1);
    if (relation.is("=="))
      problem_.add_constraint(lhs.value, Relation::kEqual, rhs, label, start.line);
    else if (relation.is("<="))
      problem_.add_constraint(lhs.value, Relation::kLessEqual, rhs, label, start.line);
    else if (relation.is(">="))
      problem_.add_constraint(lhs.value, Relation::kGreaterEqual, rhs, label, start.line);
    else if (relation.is("<"))
      problem_.add_constraint(lhs.value + one, Relation::kLessEqual, rhs, label, start.line);
    else
      problem_.add_constraint(lhs.value, Relation::kGreaterEqual, rhs + one, label, start.line);
  }

  Expr expression() { return sum(false).value; }

  // term {(+|-) term}
  Term sum(bool allow_percent) {
    Term first = term(allow_percent);
    Expr value = first.value;
    size_t terms = 1;
    while (peek().is("+") || peek().is("-")) {
      const bool minus = next().is("-");
      Term t = term(allow_percent);
      if (t.divisor) first = t;
      value = minus ? value - t.value : value + t.value;
      ++terms;
    }
    if (first.divisor && terms > 1)
      fail(*first.percent,
           "'%' binds like '*' and is only allowed as the whole left side of 'a % b == 0'; "
           "write '(a + b) % c == 0'");
    first.value = value;
    return first;
  }

  // factor {* factor} [% factor]
  Term term(bool allow_percent) {
    Term t{factor(), std::nullopt, nullptr};
    while (peek().is("*") || peek().is("%")) {
      const Token& op = next();
      if (t.divisor)
        fail(op, "nothing may follow the divisor of 'a % b == 0'");
      if (op.is("*")) {
        t.value = t.value * factor();
      } else {
        if (!allow_percent)
          fail(op, "'%' is only allowed as the whole left side of 'a % b == 0'");
        t.percent = &op;
        t.divisor = factor();
      }
    }
    return t;
  }

  // integer | name | ( expression ) | - factor
  Expr factor() {
    const Token& t = next();
    if (t.kind == Token::Kind::kInteger) return Expr::constant(t.value);
    if (t.kind == Token::Kind::kName) return Expr::variable(known_variable(t));
    if (t.is("(")) {
      Expr e = expression();
      expect(")", "to close the parenthesis");
      return e;
    }
    if (t.is("-")) return -factor();
    fail(t, "expected a number, a variable or '(', found " + quoted(t));
  }

  int known_variable(const Token& t) {
    if (t.kind != Token::Kind::kName) fail(t, "expected a variable name, found " + quoted(t));
    if (is_keyword(t.text)) fail(t, "'" + t.text + "' is a keyword, not a variable");
    const int i = problem_.find(t.text);
    if (i >= 0) return i;
    std::string message = "unknown variable '" + t.text + "'";
    std::string best;
    size_t best_distance = 3;  // suggest only close names
    for (const Variable& v : problem_.variables())
      if (size_t d = distance(t.text, v.name); d < best_distance) best_distance = d, best = v.name;
    if (!best.empty()) message += "; did you mean '" + best + "'?";
    fail(t, message + " (declare it with 'var' or 'param' before use)");
  }

  std::string file_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  Problem problem_;
  std::vector<int> order_;
  int order_line_ = 0;
  int objective_line_ = 0;
};

}  // namespace

Problem parse_problem(std::string_view text, std::string_view file_name) {
  return Parser(text, std::string(file_name)).parse();
}

Problem load_problem(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ProblemError("cannot read problem file '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_problem(text.str(), path);
}

}  // namespace flashrnn::tune

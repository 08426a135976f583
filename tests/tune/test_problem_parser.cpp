// The text format: a full problem parses into what it says, and each kind of
// mistake is reported at its line and column.
#include <gtest/gtest.h>

#include <string>

#include "flashrnn/tune/problem_parser.h"
#include "flashrnn/tune/solver.h"

namespace flashrnn::tune {
namespace {

TEST(ProblemParser, ParsesEveryStatement) {
  const Problem p = parse_problem(R"(# threads of a block
param max_threads = 256
param unused

var warps in 1..32
var threads in 32..1024 multiple of 32 descending   # trailing comment
var tile in {64, 16, 32}
var cluster in 1..16 power of 2
order tile, warps
fits: threads <= max_threads
threads == 32 * warps
(threads * tile) % 1024 == 0
cluster * tile >= 64
cluster < 4
maximize threads - tile
)");
  ASSERT_EQ(p.variables().size(), 6u);
  EXPECT_TRUE(p.variables()[0].is_parameter);
  EXPECT_EQ(p.variables()[0].domain.to_string(), "256..256");
  EXPECT_TRUE(p.variables()[1].domain.empty());  // unset parameter
  EXPECT_EQ(p.variables()[3].domain.to_string(), "32..1024 multiple of 32");
  EXPECT_EQ(p.variables()[3].value_order, ValueOrder::kDescending);
  EXPECT_EQ(p.variables()[4].domain.to_string(), "{16, 32, 64}");
  EXPECT_EQ(p.variables()[5].domain.to_string(), "{1, 2, 4, 8, 16}");
  EXPECT_EQ(p.variables()[5].line, 8);
  ASSERT_EQ(p.constraints().size(), 5u);
  EXPECT_EQ(p.describe(0), "constraint 'fits' (line 10): threads <= max_threads");
  EXPECT_EQ(p.describe(2), "constraint 3 (line 12): threads * tile % 1024 == 0");
  EXPECT_EQ(p.describe(4), "constraint 5 (line 14): cluster + 1 <= 4");
  ASSERT_TRUE(p.objective());
  EXPECT_EQ(p.objective()->goal, Goal::kMaximize);
  EXPECT_EQ(p.search_order(), (std::vector<int>{4, 2, 0, 1, 3, 5}));
}

TEST(ProblemParser, ParsedProblemSolves) {
  Problem p = parse_problem(
      "param n\r\nvar x in 0..20\r\nvar y in 0..20\r\nx + y == n\r\nx - y > 2\r\nx % 3 == 0\r\n");
  p.set_parameter("n", 12);
  // x + y = 12, x − y >= 3, 3 | x: x in {9, 12}.
  EXPECT_EQ(solve_all(p).solutions, (std::vector<Assignment>{{12, 9, 3}, {12, 12, 0}}));
}

struct BadText {
  const char* name;  // of the test case
  const char* text;
  int line;
  int column;
  const char* message_part;
};

class ProblemParserErrors : public ::testing::TestWithParam<BadText> {};

TEST_P(ProblemParserErrors, ReportLineColumnAndReason) {
  const BadText& bad = GetParam();
  try {
    parse_problem(bad.text, "model.txt");
    FAIL() << "accepted: " << bad.text;
  } catch (const ParseError& e) {
    EXPECT_EQ(e.line(), bad.line) << e.what();
    EXPECT_EQ(e.column(), bad.column) << e.what();
    EXPECT_NE(e.message().find(bad.message_part), std::string::npos) << e.what();
    const std::string prefix = "model.txt:" + std::to_string(bad.line) + ":" +
                               std::to_string(bad.column) + ": ";
    EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ProblemParserErrors,
    ::testing::Values(
        BadText{"EmptyRange", "var x in 5..3", 1, 10, "is empty"},
        BadText{"UnknownVariable", "var x in 1..4\nx + y <= 3", 2, 5, "unknown variable 'y'"},
        BadText{"DidYouMean", "var head_dim in 1..4\nhead_dm == 3", 2, 1, "did you mean 'head_dim'?"},
        BadText{"SingleEquals", "var x in 1..4\nx = 3", 2, 3, "expected a comparison"},
        BadText{"ZeroStep", "var x in 1..4 multiple of 0", 1, 27, "positive"},
        BadText{"NoValuesLeft", "var x in 3..5 multiple of 8", 1, 10, "has no values"},
        BadText{"EmptySet", "var x in {}", 1, 11, "at least one value"},
        BadText{"UnclosedSet", "var x in {1, 2", 1, 15, "expected '}'"},
        BadText{"DuplicateVariable", "var x in 1..4\n\n  var x in 1..3", 3, 7, "already declared at line 1"},
        BadText{"PercentInsideASum", "var x in 1..4\nx + 1 % 2 == 0", 2, 7, "binds like '*'"},
        BadText{"DivisibilityNotZero", "var x in 1..4\nx % 2 == 1", 2, 3, "reads 'a % b == 0'"},
        BadText{"AfterTheDivisor", "var x in 1..4\nx % 2 * x == 0", 2, 7, "nothing may follow"},
        BadText{"TwoStatementsOnALine", "var x in 1..4\nx <= 3 3", 2, 8, "one statement per line"},
        BadText{"BadCharacter", "var x in 1..4 @", 1, 15, "unexpected character '@'"},
        BadText{"HugeInteger", "var x in 1..99999999999999999999", 1, 13, "outside the supported range"},
        BadText{"LetterAfterNumber", "var x in 1..4x", 1, 14, "after the number"},
        BadText{"KeywordAsName", "var in in 1..2", 1, 5, "keyword"},
        BadText{"OrderTwice", "var x in 1..4\norder x, x", 2, 10, "listed twice"},
        BadText{"SecondObjective", "var x in 1..4\nminimize x\nmaximize x", 3, 1, "second objective"},
        BadText{"DuplicateLabel", "var x in 1..4\nc: x <= 3\nc: x >= 1", 3, 1, "used twice"},
        BadText{"PowerOfThree", "var x in 1..3 power of 3", 1, 24, "power of 2"},
        BadText{"UnclosedParenthesis", "var x in 1..4\n(x <= 3", 2, 4, "expected ')'"},
        BadText{"MissingOperand", "var x in 1..4\nx <=", 2, 5, "expected a number"},
        BadText{"MissingIn", "var x 1..4", 1, 7, "expected 'in'"},
        BadText{"ParameterNotANumber", "param p = q", 1, 11, "expected an integer"}));

TEST(ProblemParser, MissingFileIsAnErrorNamingIt) {
  try {
    load_problem("/nonexistent/model.txt");
    FAIL();
  } catch (const ProblemError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/model.txt"), std::string::npos);
  }
}

}  // namespace
}  // namespace flashrnn::tune

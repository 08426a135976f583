// Problems small enough to solve by hand; the expected solutions are worked out
// in the comments.
#include <gtest/gtest.h>

#include <vector>

#include "flashrnn/tune/errors.h"
#include "flashrnn/tune/solver.h"

namespace flashrnn::tune {
namespace {

Expr c(int64_t v) { return Expr::constant(v); }

TEST(SolverHandSolved, SumAndProduct) {
  // x + y = 10 and x·y >= 21  =>  x(10 − x) >= 21  =>  3 <= x <= 7.
  Problem p;
  Expr x = p.add_variable("x", Domain::interval(1, 10));
  Expr y = p.add_variable("y", Domain::interval(1, 10));
  p.add_constraint(x + y, Relation::kEqual, c(10));
  p.add_constraint(x * y, Relation::kGreaterEqual, c(21));
  const SolveResult r = solve_all(p);
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.solutions, (std::vector<Assignment>{{3, 7}, {4, 6}, {5, 5}, {6, 4}, {7, 3}}));
  EXPECT_FALSE(r.conflict);
}

TEST(SolverHandSolved, Divisibility) {
  // Multiples of lcm(6, 4) = 12 in 30..100.
  Problem p;
  Expr n = p.add_variable("n", Domain::interval(1, 100));
  p.add_constraint(n, Relation::kDivisible, c(6));
  p.add_constraint(n, Relation::kDivisible, c(4));
  p.add_constraint(n, Relation::kGreaterEqual, c(30));
  const SolveResult r = solve_all(p);
  EXPECT_EQ(r.solutions, (std::vector<Assignment>{{36}, {48}, {60}, {72}, {84}, {96}}));
  // Value filtering finds them all before search decides anything.
  EXPECT_EQ(r.stats.failures, 0u);
}

TEST(SolverHandSolved, VariableDivisorDividesAProduct) {
  // d divides 12·k with d in {5, 6, 7, 8} and k in {1, 2}: 6 | 12, 6 | 24, 8 | 24.
  Problem p;
  Expr d = p.add_variable("d", Domain::values({5, 6, 7, 8}));
  Expr k = p.add_variable("k", Domain::interval(1, 2));
  p.add_constraint(c(12) * k, Relation::kDivisible, d);
  EXPECT_EQ(solve_all(p).solutions, (std::vector<Assignment>{{6, 1}, {6, 2}, {8, 2}}));
}

TEST(SolverHandSolved, PowersOfTwoAndValueSets) {
  // tile · cluster = 128 with tile in {16, 32, 64}: cluster = 128 / tile.
  Problem p;
  Expr tile = p.add_variable("tile", Domain::values({16, 32, 64}));
  Expr cluster = p.add_variable("cluster", Domain::powers_of_two(1, 16));
  p.add_constraint(tile * cluster, Relation::kEqual, c(128));
  EXPECT_EQ(solve_all(p).solutions, (std::vector<Assignment>{{16, 8}, {32, 4}, {64, 2}}));
}

TEST(SolverHandSolved, NegativeValuesAndSubtraction) {
  // a − b = 7 leaves (2,−5) (3,−4) (4,−3) (5,−2); a·b <= −11 keeps products −12.
  Problem p;
  Expr a = p.add_variable("a", Domain::interval(-5, 5));
  Expr b = p.add_variable("b", Domain::interval(-5, 5));
  p.add_constraint(a - b, Relation::kEqual, c(7));
  p.add_constraint(a * b, Relation::kLessEqual, c(-11));
  EXPECT_EQ(solve_all(p).solutions, (std::vector<Assignment>{{3, -4}, {4, -3}}));
}

TEST(SolverHandSolved, PropagationAloneSolvesALinearEquation) {
  // 3x + 6 = 48  =>  x = 14, and y = 2x − 1 = 27: no search needed.
  Problem p;
  Expr x = p.add_variable("x", Domain::interval(0, 1000));
  Expr y = p.add_variable("y", Domain::interval(-1000, 1000));
  p.add_constraint(c(3) * x + c(6), Relation::kEqual, c(48));
  p.add_constraint(y, Relation::kEqual, c(2) * x - c(1));
  const SolveResult r = solve_all(p);
  EXPECT_EQ(r.solutions, (std::vector<Assignment>{{14, 27}}));
  EXPECT_EQ(r.stats.nodes, 1u);
}

TEST(SolverHandSolved, SearchFollowsVariableAndValueOrder) {
  // x + y = 4 over 0..4: five solutions; deciding y first, x descending, lists
  // them by y ascending.
  Problem p;
  Expr x = p.add_variable("x", Domain::interval(0, 4), ValueOrder::kDescending);
  Expr y = p.add_variable("y", Domain::interval(0, 4));
  p.add_constraint(x + y, Relation::kEqual, c(4));
  p.set_search_order({1});
  EXPECT_EQ(solve_all(p).solutions,
            (std::vector<Assignment>{{4, 0}, {3, 1}, {2, 2}, {1, 3}, {0, 4}}));
  p.set_search_order({0});
  EXPECT_EQ(solve_all(p).solutions,
            (std::vector<Assignment>{{4, 0}, {3, 1}, {2, 2}, {1, 3}, {0, 4}}));
  Problem q;
  Expr u = q.add_variable("u", Domain::interval(0, 2));
  Expr v = q.add_variable("v", Domain::interval(0, 1), ValueOrder::kDescending);
  q.set_search_order({1, 0});
  EXPECT_EQ(solve_all(q).solutions,
            (std::vector<Assignment>{{0, 1}, {1, 1}, {2, 1}, {0, 0}, {1, 0}, {2, 0}}));
  (void)u, (void)v;
}

TEST(SolverHandSolved, BestByObjectiveTakesTheFirstOptimumInSearchOrder) {
  // threads · regs <= 65536 with regs >= 40: threads = 1024 allows regs 40..64;
  // the first of them in ascending order is 40.
  Problem p;
  Expr threads = p.add_variable("threads", Domain::multiples_of(32, 32, 1024));
  Expr regs = p.add_variable("regs", Domain::multiples_of(8, 0, 255));
  p.add_constraint(threads * regs, Relation::kLessEqual, c(65536));
  p.add_constraint(regs, Relation::kGreaterEqual, c(40));
  p.set_objective(threads, Goal::kMaximize);
  const SolveResult best = solve_best(p);
  ASSERT_TRUE(best.satisfiable());
  EXPECT_EQ(best.solutions, (std::vector<Assignment>{{1024, 40}}));
  EXPECT_EQ(best.objective, 1024);

  // Minimising threads·regs: the smallest product is 32·40 = 1280.
  p.set_objective(threads * regs, Goal::kMinimize);
  const SolveResult least = solve_best(p);
  EXPECT_EQ(least.solutions, (std::vector<Assignment>{{32, 40}}));
  EXPECT_EQ(least.objective, 1280);
}

TEST(SolverHandSolved, LimitsStopTheSearchAndSaySo) {
  Problem p;
  p.add_variable("x", Domain::interval(0, 99));
  SolveOptions options;
  options.max_solutions = 7;
  const SolveResult r = solve_all(p, options);
  EXPECT_EQ(r.solutions.size(), 7u);
  EXPECT_FALSE(r.complete);
  EXPECT_FALSE(r.conflict);  // incomplete is not unsatisfiable
  EXPECT_EQ(r.solutions.back(), Assignment{6});
}

TEST(SolverHandSolved, ParametersAreFixedBeforeSolving) {
  Problem p;
  Expr n = p.add_parameter("n");
  Expr x = p.add_variable("x", Domain::interval(0, 100));
  p.add_constraint(x * x, Relation::kEqual, n);
  try {
    solve_all(p);
    FAIL() << "an unset parameter was accepted";
  } catch (const ProblemError& e) {
    EXPECT_NE(std::string(e.what()).find("'n'"), std::string::npos) << e.what();
  }
  p.set_parameter("n", 49);
  EXPECT_EQ(solve_all(p).solutions, (std::vector<Assignment>{{49, 7}}));
  EXPECT_THROW(p.set_parameter("x", 3), ProblemError);  // a variable, not a parameter
}

TEST(SolverHandSolved, ExpressionsThatCanOverflowAreRejected) {
  Problem p;
  Expr x = p.add_variable("x", Domain::interval(0, int64_t{1} << 40));
  p.add_constraint(x * x * x, Relation::kGreaterEqual, c(0), "cube");
  try {
    solve_all(p);
    FAIL() << "x^3 with x up to 2^40 was accepted";
  } catch (const ProblemError& e) {
    EXPECT_NE(std::string(e.what()).find("'cube'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("2^62"), std::string::npos) << e.what();
  }
}

TEST(SolverHandSolved, EvaluateAndPrint) {
  Problem p;
  Expr a = p.add_variable("a", Domain::interval(0, 9));
  Expr b = p.add_variable("b", Domain::interval(0, 9));
  const Expr e = c(2) * (a + b) - b * c(3) - (a - c(1));
  EXPECT_EQ(e.evaluate({4, 5}), 2 * 9 - 15 - 3);
  EXPECT_EQ(e.to_string(p.names()), "2 * (a + b) - b * 3 - (a - 1)");
  EXPECT_EQ((-a + b).to_string(p.names()), "-a + b");
}

}  // namespace
}  // namespace flashrnn::tune

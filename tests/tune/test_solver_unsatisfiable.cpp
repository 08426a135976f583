// Problems without solutions: the solver says which constraint emptied which
// domain, or, when only search could tell, which constraint closed the most branches.
#include <gtest/gtest.h>

#include "flashrnn/tune/solver.h"

namespace flashrnn::tune {
namespace {

Expr c(int64_t v) { return Expr::constant(v); }

bool mentions(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(SolverUnsatisfiable, BoundsContradictionNamesConstraintAndVariable) {
  Problem p;
  Expr x = p.add_variable("x", Domain::interval(0, 10));
  const int at_least = p.add_constraint(x, Relation::kGreaterEqual, c(5), "at_least_5");
  const int at_most = p.add_constraint(x, Relation::kLessEqual, c(3), "at_most_3", 7);
  const SolveResult r = solve_all(p);
  EXPECT_FALSE(r.satisfiable());
  ASSERT_TRUE(r.conflict);
  // at_least_5 narrows x to 5..10 first (constraints are revised in order), then
  // at_most_3 empties it.
  EXPECT_EQ(r.conflict->constraint, at_most);
  EXPECT_NE(r.conflict->constraint, at_least);
  EXPECT_EQ(r.conflict->variable, 0);
  EXPECT_TRUE(r.conflict->before_search);
  const std::string why = explain(p, *r.conflict);
  EXPECT_TRUE(mentions(why, "'at_most_3' (line 7): x <= 3")) << why;
  EXPECT_TRUE(mentions(why, "domain of 'x'")) << why;
}

TEST(SolverUnsatisfiable, SumThatCannotReachItsTarget) {
  Problem p;
  Expr x = p.add_variable("x", Domain::interval(0, 10));
  Expr y = p.add_variable("y", Domain::interval(0, 10));
  const int sum = p.add_constraint(x + y, Relation::kGreaterEqual, c(25), "sum");
  const SolveResult r = solve_all(p);
  ASSERT_TRUE(r.conflict);
  EXPECT_EQ(r.conflict->constraint, sum);
  EXPECT_EQ(r.conflict->variable, -1);  // the sum as a whole fails, no single variable
  EXPECT_TRUE(mentions(explain(p, *r.conflict), "cannot hold")) << explain(p, *r.conflict);
}

TEST(SolverUnsatisfiable, DivisibilityFiltersEveryValue) {
  Problem p;
  Expr x = p.add_variable("x", Domain::values({3, 5, 7}));
  p.add_variable("unrelated", Domain::interval(0, 3));
  const int even = p.add_constraint(x, Relation::kDivisible, c(2), "even");
  const SolveResult r = solve_all(p);
  ASSERT_TRUE(r.conflict);
  EXPECT_EQ(r.conflict->constraint, even);
  EXPECT_EQ(r.conflict->variable, 0);
  EXPECT_EQ(r.stats.nodes, 1u);
}

TEST(SolverUnsatisfiable, DivisionByZeroNeverHolds) {
  Problem p;
  Expr x = p.add_variable("x", Domain::interval(0, 4));
  p.add_constraint(x, Relation::kDivisible, c(0));
  EXPECT_FALSE(solve_all(p).satisfiable());
}

TEST(SolverUnsatisfiable, OddCycleNeedsSearchAndReportsTheBusiestConstraint) {
  // x + y = y + z = x + z = 1 over {0, 1}: summing gives 2(x + y + z) = 3.
  // Interval reasoning cannot see it; search does.
  Problem p;
  Expr x = p.add_variable("x", Domain::interval(0, 1));
  Expr y = p.add_variable("y", Domain::interval(0, 1));
  Expr z = p.add_variable("z", Domain::interval(0, 1));
  p.add_constraint(x + y, Relation::kEqual, c(1), "xy");
  p.add_constraint(y + z, Relation::kEqual, c(1), "yz");
  p.add_constraint(x + z, Relation::kEqual, c(1), "xz");
  const SolveResult r = solve_all(p);
  EXPECT_FALSE(r.satisfiable());
  EXPECT_TRUE(r.complete);
  ASSERT_TRUE(r.conflict);
  EXPECT_FALSE(r.conflict->before_search);
  EXPECT_GT(r.conflict->branches, 0u);
  EXPECT_GE(r.conflict->constraint, 0);
  EXPECT_GT(r.stats.nodes, 1u);
  EXPECT_TRUE(mentions(explain(p, *r.conflict), "search tried every branch"))
      << explain(p, *r.conflict);
}

TEST(SolverUnsatisfiable, SlowCycleStopsPropagatingAndSearchFinishesTheProof) {
  // x < y and y < x: interval reasoning shrinks the domains by one per
  // revision, thousands of revisions; propagation gives up early (soundly) and
  // search closes every branch at once.
  Problem p;
  Expr x = p.add_variable("x", Domain::interval(0, 3000));
  Expr y = p.add_variable("y", Domain::interval(0, 3000));
  p.add_constraint(x + c(1), Relation::kLessEqual, y, "x_below_y");
  p.add_constraint(y + c(1), Relation::kLessEqual, x, "y_below_x");
  const SolveResult r = solve_all(p);
  EXPECT_FALSE(r.satisfiable());
  EXPECT_TRUE(r.complete);
  ASSERT_TRUE(r.conflict);
  EXPECT_FALSE(r.conflict->before_search);
  EXPECT_GT(r.stats.nodes, 1u);
  EXPECT_LT(r.stats.seconds, 1.0);
}

TEST(SolverUnsatisfiable, BestOfNothingIsUnsatisfiableToo) {
  Problem p;
  Expr x = p.add_variable("x", Domain::interval(0, 10));
  p.add_constraint(x * x, Relation::kEqual, c(50), "square");
  p.set_objective(x, Goal::kMaximize);
  const SolveResult r = solve_best(p);
  EXPECT_FALSE(r.satisfiable());
  EXPECT_FALSE(r.objective);
  ASSERT_TRUE(r.conflict);
  EXPECT_EQ(r.conflict->constraint, 0);
}

}  // namespace
}  // namespace flashrnn::tune

// Random small problems: the solver's solutions must be exactly those found by
// enumerating every assignment, in the same order, and solve_best must find the
// first optimum of that enumeration. The test keeps its own expression tree and
// evaluator, so it does not trust the library's.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>
#include <vector>

#include "flashrnn/tune/solver.h"

namespace flashrnn::tune {
namespace {

struct TestExpr {
  enum Kind { kConstant, kVariable, kAdd, kSubtract, kMultiply } kind;
  int64_t value = 0;
  int variable = 0;
  std::shared_ptr<TestExpr> a, b;

  int64_t evaluate(const std::vector<int64_t>& x) const {
    switch (kind) {
      case kConstant: return value;
      case kVariable: return x[variable];
      case kAdd: return a->evaluate(x) + b->evaluate(x);
      case kSubtract: return a->evaluate(x) - b->evaluate(x);
      case kMultiply: return a->evaluate(x) * b->evaluate(x);
    }
    return 0;
  }
  Expr to_library() const {
    switch (kind) {
      case kConstant: return Expr::constant(value);
      case kVariable: return Expr::variable(variable);
      case kAdd: return a->to_library() + b->to_library();
      case kSubtract: return a->to_library() - b->to_library();
      case kMultiply: return a->to_library() * b->to_library();
    }
    return Expr::constant(0);
  }
};

struct TestConstraint {
  std::shared_ptr<TestExpr> lhs, rhs;
  Relation relation;

  bool holds(const std::vector<int64_t>& x) const {
    const int64_t l = lhs->evaluate(x), r = rhs->evaluate(x);
    switch (relation) {
      case Relation::kEqual: return l == r;
      case Relation::kLessEqual: return l <= r;
      case Relation::kGreaterEqual: return l >= r;
      case Relation::kDivisible: return r != 0 && l % r == 0;
    }
    return false;
  }
};

struct RandomProblem {
  std::vector<std::vector<int64_t>> values;  // per variable, ascending
  std::vector<bool> descending;
  std::vector<int> order;                    // full search order
  std::vector<TestConstraint> constraints;
  std::shared_ptr<TestExpr> objective;
  Goal goal = Goal::kMinimize;
  Problem problem;
};

class Generator {
 public:
  explicit Generator(unsigned seed) : rng_(seed) {}

  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  std::shared_ptr<TestExpr> expression(int vars, int depth) {
    auto e = std::make_shared<TestExpr>();
    if (depth == 0 || uniform(0, 2) == 0) {
      if (uniform(0, 4) < 3) {
        e->kind = TestExpr::kVariable;
        e->variable = uniform(0, vars - 1);
      } else {
        e->kind = TestExpr::kConstant;
        e->value = uniform(-4, 6);
      }
      return e;
    }
    e->kind = static_cast<TestExpr::Kind>(uniform(TestExpr::kAdd, TestExpr::kMultiply));
    e->a = expression(vars, depth - 1);
    e->b = expression(vars, depth - 1);
    return e;
  }

  // The values listed here by hand, and the library domain that should hold them.
  std::pair<std::vector<int64_t>, Domain> domain() {
    std::vector<int64_t> v;
    switch (uniform(0, 3)) {
      case 0: {
        const int lo = uniform(-6, 4), hi = lo + uniform(0, 7);
        for (int i = lo; i <= hi; ++i) v.push_back(i);
        return {v, Domain::interval(lo, hi)};
      }
      case 1: {
        const int step = uniform(2, 3), lo = uniform(-8, 4), hi = lo + uniform(0, 14);
        for (int i = lo; i <= hi; ++i)
          if (i % step == 0) v.push_back(i);
        if (v.empty()) return {{0}, Domain::single(0)};  // keep domains non-empty
        return {v, Domain::multiples_of(step, lo, hi)};
      }
      case 2: {
        const int n = uniform(1, 5);
        for (int i = 0; i < n; ++i) v.push_back(uniform(-8, 12));
        std::vector<int64_t> library = v;
        std::sort(v.begin(), v.end());
        v.erase(std::unique(v.begin(), v.end()), v.end());
        return {v, Domain::values(library)};
      }
      default: {
        const int hi = 1 << uniform(0, 5);
        for (int p = 1; p <= hi; p *= 2) v.push_back(p);
        return {v, Domain::powers_of_two(1, hi)};
      }
    }
  }

  RandomProblem problem() {
    RandomProblem r;
    const int vars = uniform(1, uniform(0, 4) == 0 ? 5 : 4);
    for (int i = 0; i < vars; ++i) {
      auto [values, domain] = domain_checked();
      r.values.push_back(values);
      r.descending.push_back(uniform(0, 1) == 1);
      r.problem.add_variable("x" + std::to_string(i), domain,
                             r.descending.back() ? ValueOrder::kDescending : ValueOrder::kAscending);
    }
    r.order.resize(vars);
    std::iota(r.order.begin(), r.order.end(), 0);
    std::shuffle(r.order.begin(), r.order.end(), rng_);
    // Give the solver a prefix of the shuffled order; the rest follows declaration order.
    const int given = uniform(0, vars);
    std::vector<int> first(r.order.begin(), r.order.begin() + given);
    r.problem.set_search_order(first);
    r.order = r.problem.search_order();
    for (int i = uniform(1, 4); i > 0; --i) {
      TestConstraint c{expression(vars, 2), expression(vars, uniform(0, 2)),
                       static_cast<Relation>(uniform(0, 3))};
      r.constraints.push_back(c);
      r.problem.add_constraint(c.lhs->to_library(), c.relation, c.rhs->to_library());
    }
    r.objective = expression(vars, 2);
    r.goal = uniform(0, 1) ? Goal::kMaximize : Goal::kMinimize;
    r.problem.set_objective(r.objective->to_library(), r.goal);
    return r;
  }

 private:
  std::pair<std::vector<int64_t>, Domain> domain_checked() {
    auto d = domain();
    // The domain must hold exactly the values listed by hand.
    std::vector<int64_t> library;
    for (uint64_t i = 0; i < d.second.size(); ++i) library.push_back(d.second.value_at(i));
    EXPECT_EQ(library, d.first);
    return d;
  }

  std::mt19937 rng_;
};

// Every assignment in search order (each variable's values in its value order).
void enumerate(const RandomProblem& r, size_t position, std::vector<int64_t>& x,
               std::vector<Assignment>& out) {
  if (position == r.order.size()) {
    if (std::all_of(r.constraints.begin(), r.constraints.end(),
                    [&](const TestConstraint& c) { return c.holds(x); }))
      out.push_back(x);
    return;
  }
  const int var = r.order[position];
  std::vector<int64_t> values = r.values[var];
  if (r.descending[var]) std::reverse(values.begin(), values.end());
  for (int64_t v : values) {
    x[var] = v;
    enumerate(r, position + 1, x, out);
  }
}

std::string describe(const RandomProblem& r) {
  std::ostringstream s;
  for (size_t i = 0; i < r.problem.variables().size(); ++i)
    s << r.problem.variables()[i].name << " in " << r.problem.variables()[i].domain.to_string()
      << (r.descending[i] ? " descending" : "") << "\n";
  for (size_t i = 0; i < r.problem.constraints().size(); ++i) s << r.problem.describe(int(i)) << "\n";
  s << "order:";
  for (int v : r.order) s << " x" << v;
  return s.str();
}

TEST(SolverBruteForce, SolutionSetsEqualEnumerationOnRandomProblems) {
  int satisfiable = 0, unsatisfiable = 0;
  for (unsigned seed = 1; seed <= 2000; ++seed) {
    Generator g(seed);
    RandomProblem r = g.problem();
    std::vector<int64_t> x(r.values.size());
    std::vector<Assignment> expected;
    enumerate(r, 0, x, expected);

    const SolveResult got = solve_all(r.problem);
    ASSERT_TRUE(got.complete);
    ASSERT_EQ(got.solutions, expected) << "seed " << seed << "\n" << describe(r);
    ASSERT_EQ(got.conflict.has_value(), expected.empty()) << "seed " << seed;
    (expected.empty() ? unsatisfiable : satisfiable)++;

    // The best: the first assignment in enumeration order with the best value.
    const SolveResult best = solve_best(r.problem);
    if (expected.empty()) {
      ASSERT_FALSE(best.satisfiable()) << "seed " << seed;
      continue;
    }
    const Assignment* want = &expected[0];
    for (const Assignment& a : expected) {
      const int64_t v = r.objective->evaluate(a), w = r.objective->evaluate(*want);
      if (r.goal == Goal::kMinimize ? v < w : v > w) want = &a;
    }
    ASSERT_EQ(best.solutions, std::vector<Assignment>{*want}) << "seed " << seed << "\n"
                                                               << describe(r);
    ASSERT_EQ(best.objective, r.objective->evaluate(*want));
  }
  // Both kinds must have been exercised for the comparison to mean something.
  EXPECT_GT(satisfiable, 300);
  EXPECT_GT(unsatisfiable, 100);
  std::printf("brute force: %d satisfiable and %d unsatisfiable random problems agree\n",
              satisfiable, unsatisfiable);
}

}  // namespace
}  // namespace flashrnn::tune

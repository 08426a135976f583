#include "flashrnn/tune/solver.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "flashrnn/tune/errors.h"
#include "propagator.h"

namespace flashrnn::tune {
namespace {

static_assert(Conflict::kObjectiveBound == detail::kObjectiveBound);

class Search {
 public:
  Search(const Problem& problem, const SolveOptions& options, bool optimize)
      : problem_(problem), options_(options), optimize_(optimize), propagator_(problem),
        order_(problem.search_order()) {}

  SolveResult run() {
    const auto start = std::chrono::steady_clock::now();
    std::vector<Domain> domains;
    for (const Variable& v : problem_.variables()) domains.push_back(v.domain);
    result_.stats.nodes = 1;
    if (!propagator_.propagate_all(domains)) {
      result_.stats.failures = 1;
      const detail::Failure& f = propagator_.failure();
      result_.conflict = Conflict{f.constraint, f.variable, true, 1};
    } else {
      descend(domains, 0);
      if (result_.solutions.empty() && result_.complete) result_.conflict = most_frequent_failure();
    }
    result_.stats.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return std::move(result_);
  }

 private:
  // `next`: position in order_ before which every variable is decided.
  void descend(std::vector<Domain>& domains, size_t next) {
    while (next < order_.size() && domains[order_[next]].fixed()) ++next;
    if (next == order_.size()) return record(domains);
    const int var = order_[next];
    const Domain& d = domains[var];
    const uint64_t n = d.size();
    const bool descending = problem_.variables()[var].value_order == ValueOrder::kDescending;
    for (uint64_t i = 0; i < n && !stopped(); ++i) {
      std::vector<Domain> child = domains;
      child[var].assign(d.value_at(descending ? n - 1 - i : i));
      ++result_.stats.nodes;
      if (propagator_.propagate_from(var, child)) {
        descend(child, next + 1);
      } else {
        ++result_.stats.failures;
        const detail::Failure& f = propagator_.failure();
        ++failures_by_constraint_[f.constraint];
      }
    }
  }

  bool stopped() {
    if (result_.stats.nodes >= options_.max_nodes ||
        (!optimize_ && result_.solutions.size() >= options_.max_solutions)) {
      result_.complete = false;
      return true;
    }
    return false;
  }

  void record(const std::vector<Domain>& domains) {
    Assignment a;
    a.reserve(domains.size());
    for (const Domain& d : domains) a.push_back(d.min());
    // Revising a constraint whose variables are all fixed is exact, so a leaf
    // is a solution, unless propagation stopped early on its revision budget.
    if (propagator_.stopped_early())
      for (const Constraint& c : problem_.constraints())
        if (!holds(c, a)) return;
    if (!optimize_) {
      result_.solutions.push_back(std::move(a));
      return;
    }
    const Objective& objective = *problem_.objective();
    const int64_t value = objective.expr.evaluate(a);
    const bool better = !result_.objective ||
                        (objective.goal == Goal::kMinimize ? value < *result_.objective
                                                           : value > *result_.objective);
    if (!better) return;
    result_.objective = value;
    result_.solutions.assign(1, std::move(a));
    propagator_.require_better_than(value);
  }

  Conflict most_frequent_failure() const {
    Conflict c{-1, -1, false, 0};
    for (const auto& [constraint, count] : failures_by_constraint_)
      if (count > c.branches) c = Conflict{constraint, -1, false, count};
    return c;
  }

  const Problem& problem_;
  const SolveOptions& options_;
  const bool optimize_;
  detail::Propagator propagator_;
  const std::vector<int> order_;
  SolveResult result_;
  std::map<int, uint64_t> failures_by_constraint_;  // ordered: ties go to the lowest index
};

}  // namespace

SolveResult solve_all(const Problem& problem, const SolveOptions& options) {
  problem.check_parameters_set();
  return Search(problem, options, false).run();
}

SolveResult solve_best(const Problem& problem, const SolveOptions& options) {
  if (!problem.objective())
    throw ProblemError("solve_best needs an objective (minimize or maximize)");
  problem.check_parameters_set();
  return Search(problem, options, true).run();
}

std::string explain(const Problem& problem, const Conflict& conflict) {
  std::string what;
  if (conflict.constraint == Conflict::kObjectiveBound)
    what = "the objective bound";
  else if (conflict.constraint >= 0 && size_t(conflict.constraint) < problem.constraints().size())
    what = problem.describe(conflict.constraint);
  else
    return "no solution (no constraint failed: the search space is empty)";
  if (!conflict.before_search)
    return "no solution: search tried every branch; " + what + " closed the most of them (" +
           std::to_string(conflict.branches) + ")";
  if (conflict.variable >= 0)
    return what + " emptied the domain of '" + problem.variables()[conflict.variable].name +
           "' before search";
  return what + " cannot hold with the declared domains";
}

}  // namespace flashrnn::tune

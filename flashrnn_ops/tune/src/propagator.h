// Narrows domains to a fixpoint of the constraints: interval (bounds)
// reasoning over each constraint's expression trees, then value filtering,
// which drops single values that have no support.
#pragma once

#include <cstdint>
#include <vector>

#include "flashrnn/tune/domain.h"
#include "flashrnn/tune/problem.h"
#include "flat_expr.h"

namespace flashrnn::tune::detail {

// Which constraint emptied which domain (variable -1: the constraint as a whole
// cannot hold under the current bounds).
struct Failure {
  int constraint = -1;  // index into problem.constraints(), or kObjectiveBound
  int variable = -1;
};

inline constexpr int kObjectiveBound = -2;

class Propagator {
 public:
  // Throws ProblemError if an expression can leave ±(2^62 − 1) over the
  // problem's domains.
  explicit Propagator(const Problem& problem);

  // Revises every constraint (the first propagation, before search).
  bool propagate_all(std::vector<Domain>& domains);
  // Revises the constraints of a variable that was just narrowed.
  bool propagate_from(int variable, std::vector<Domain>& domains);
  const Failure& failure() const { return failure_; }
  // Whether any propagation so far ran out of its revision budget (then fixed
  // domains are not proof of a solution).
  bool stopped_early() const { return stopped_early_; }

  // Branch and bound: from now on the objective must be strictly better than `value`.
  void require_better_than(int64_t value);

 private:
  struct Compiled {
    FlatExpr lhs, rhs;
    Relation relation;
    std::vector<int> variables;
    int source;  // index into problem.constraints(), or kObjectiveBound
  };
  enum class Filtering { kThorough, kLastVariable };

  bool run(std::vector<Domain>& domains, Filtering filtering);
  void enqueue_watchers(int variable);
  // Narrows the domains by one constraint's interval reasoning; queues the
  // constraints of every variable that changed. False when a domain emptied.
  bool narrow_bounds(int c, std::vector<Domain>& domains);
  // Drops the values of the constraint's small domains that it cannot support.
  bool filter_values(int c, std::vector<Domain>& domains, Filtering filtering);
  // Whether the constraint can still hold when `variable` takes `value`.
  bool supports(const Compiled& c, const std::vector<Domain>& domains, int variable,
                int64_t value, bool thorough);
  // Targets for the two sides' roots from their intervals; false if none.
  static bool side_targets(Relation relation, Interval lhs, Interval rhs, Interval* lhs_target,
                           Interval* rhs_target);
  bool fail(int c, int variable);

  std::vector<Compiled> constraints_;
  std::vector<std::vector<int>> watchers_;  // per variable: constraints using it
  int objective_bound_ = -1;                // index in constraints_, or -1
  bool objective_bound_active_ = false;
  std::vector<int> queue_;       // constraints whose bounds to revise
  std::vector<char> queued_;
  std::vector<int> to_filter_;   // constraints revised since the last value filtering
  std::vector<char> to_filter_flag_;
  std::vector<Interval> lhs_iv_, rhs_iv_;   // scratch, one interval per node
  std::vector<char> narrowed_;              // scratch for FlatExpr::narrow
  Failure failure_;
  bool stopped_early_ = false;
};

}  // namespace flashrnn::tune::detail

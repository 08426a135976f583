#include "propagator.h"

#include <algorithm>
#include <string>

#include "flashrnn/tune/errors.h"

namespace flashrnn::tune::detail {
namespace {

// Value filtering visits every value of a domain, so only small ones.
constexpr uint64_t kFilterLimit = 256;

// A cycle of constraints can shrink a wide domain one value per revision; after
// this many revisions per constraint, propagation stops early (which is sound:
// it only keeps values that search then rules out).
constexpr size_t kRevisionsPerConstraint = 64;

Wide abs_wide(Wide v) { return v < 0 ? -v : v; }

int64_t clamp_to_int64(Wide v) {
  if (v > Wide(INT64_MAX)) return INT64_MAX;
  if (v < Wide(INT64_MIN)) return INT64_MIN;
  return int64_t(v);
}

// The intervals of every node over the declared domains must stay in range.
// `where` names the expression for the error.
template <class Where>
void check_no_overflow(const FlatExpr& e, const std::vector<Domain>& domains, Where&& where) {
  std::vector<Interval> iv;
  e.evaluate(domains, -1, 0, iv);
  for (const Interval& i : iv)
    if (i.lo < -kMaxMagnitude || i.hi > kMaxMagnitude)
      throw ProblemError(where() + ": an intermediate value can leave ±(2^62 - 1) over the " +
                         "declared domains; narrow the domains");
}

}  // namespace

Propagator::Propagator(const Problem& problem) {
  std::vector<Domain> domains;
  for (const Variable& v : problem.variables()) domains.push_back(v.domain);
  const auto& source = problem.constraints();
  for (size_t i = 0; i < source.size(); ++i) {
    Compiled c{FlatExpr::from(source[i].lhs), FlatExpr::from(source[i].rhs), source[i].relation,
               {}, int(i)};
    auto where = [&] { return problem.describe(int(i)); };
    check_no_overflow(c.lhs, domains, where);
    check_no_overflow(c.rhs, domains, where);
    constraints_.push_back(std::move(c));
  }
  if (const auto& objective = problem.objective()) {
    Compiled c{FlatExpr::from(objective->expr), FlatExpr::from(Expr::constant(0)),
               objective->goal == Goal::kMinimize ? Relation::kLessEqual : Relation::kGreaterEqual,
               {}, kObjectiveBound};
    check_no_overflow(c.lhs, domains, [] { return std::string("the objective"); });
    objective_bound_ = int(constraints_.size());
    constraints_.push_back(std::move(c));
  }
  watchers_.resize(problem.variables().size());
  for (size_t c = 0; c < constraints_.size(); ++c) {
    std::vector<int> vars = constraints_[c].lhs.variables();
    for (int v : constraints_[c].rhs.variables()) vars.push_back(v);
    std::sort(vars.begin(), vars.end());
    vars.erase(std::unique(vars.begin(), vars.end()), vars.end());
    for (int v : vars) watchers_[v].push_back(int(c));
    constraints_[c].variables = std::move(vars);
  }
  queued_.assign(constraints_.size(), 0);
  to_filter_flag_.assign(constraints_.size(), 0);
}

void Propagator::require_better_than(int64_t value) {
  Compiled& bound = constraints_.at(objective_bound_);
  // Objective values are at most 2^62 − 1 in magnitude, so ±1 stays in range.
  bound.rhs.nodes[0].value = bound.relation == Relation::kLessEqual ? value - 1 : value + 1;
  objective_bound_active_ = true;
}

void Propagator::enqueue_watchers(int variable) {
  for (int c : watchers_[variable])
    if (!queued_[c]) {
      queued_[c] = 1;
      queue_.push_back(c);
    }
}

bool Propagator::propagate_all(std::vector<Domain>& domains) {
  for (size_t c = 0; c < constraints_.size(); ++c)
    if (!queued_[c]) {
      queued_[c] = 1;
      queue_.push_back(int(c));
    }
  return run(domains, Filtering::kThorough);
}

bool Propagator::propagate_from(int variable, std::vector<Domain>& domains) {
  enqueue_watchers(variable);
  // The bound tightens between branches, so check it even when none of its
  // variables changed here.
  if (objective_bound_active_ && !queued_[objective_bound_]) {
    queued_[objective_bound_] = 1;
    queue_.push_back(objective_bound_);
  }
  return run(domains, Filtering::kLastVariable);
}

bool Propagator::run(std::vector<Domain>& domains, Filtering filtering) {
  size_t budget = kRevisionsPerConstraint * (constraints_.size() + 1);
  bool ok = true;
  // Bounds to a fixpoint first, then value filtering of the constraints that
  // were revised; when filtering removes values, bounds again.
  while (ok && !queue_.empty()) {
    for (size_t head = 0; head < queue_.size() && ok; ++head) {
      const int c = queue_[head];
      queued_[c] = 0;
      ok = narrow_bounds(c, domains);
      if (!to_filter_flag_[c]) {
        to_filter_flag_[c] = 1;
        to_filter_.push_back(c);
      }
      if (--budget == 0) break;
    }
    for (int c : queue_) queued_[c] = 0;
    queue_.clear();
    if (budget == 0) {
      stopped_early_ = true;
      break;
    }
    for (size_t i = 0; i < to_filter_.size() && ok; ++i) ok = filter_values(to_filter_[i], domains, filtering);
    for (int c : to_filter_) to_filter_flag_[c] = 0;
    to_filter_.clear();
  }
  for (int c : queue_) queued_[c] = 0;
  queue_.clear();
  for (int c : to_filter_) to_filter_flag_[c] = 0;
  to_filter_.clear();
  return ok;
}

bool Propagator::fail(int c, int variable) {
  failure_ = Failure{constraints_[c].source, variable};
  return false;
}

bool Propagator::side_targets(Relation relation, Interval lhs, Interval rhs,
                              Interval* lhs_target, Interval* rhs_target) {
  switch (relation) {
    case Relation::kEqual:
      *lhs_target = *rhs_target = intersect(lhs, rhs);
      break;
    case Relation::kLessEqual:
      *lhs_target = {lhs.lo, std::min(lhs.hi, rhs.hi)};
      *rhs_target = {std::max(rhs.lo, lhs.lo), rhs.hi};
      break;
    case Relation::kGreaterEqual:
      *lhs_target = {std::max(lhs.lo, rhs.lo), lhs.hi};
      *rhs_target = {rhs.lo, std::min(rhs.hi, lhs.hi)};
      break;
    case Relation::kDivisible: {
      // lhs % rhs == 0 with rhs != 0. Once both sides are fixed this is exact.
      Interval divisor = rhs;
      if (divisor.lo == 0) divisor.lo = 1;
      if (divisor.hi == 0) divisor.hi = -1;
      Interval dividend = lhs;
      if (divisor.fixed()) {
        const Wide k = abs_wide(divisor.lo);
        dividend = {ceil_div(lhs.lo, k) * k, floor_div(lhs.hi, k) * k};
      }
      // A non-zero dividend has no divisor larger than itself.
      if (!dividend.empty() && !dividend.contains(0)) {
        const Wide m = std::max(abs_wide(dividend.lo), abs_wide(dividend.hi));
        divisor = intersect(divisor, Interval{-m, m});
      }
      *lhs_target = dividend;
      *rhs_target = divisor;
      break;
    }
  }
  return !lhs_target->empty() && !rhs_target->empty();
}

bool Propagator::narrow_bounds(int c, std::vector<Domain>& domains) {
  const Compiled& k = constraints_[c];
  if (c == objective_bound_ && !objective_bound_active_) return true;

  k.lhs.evaluate(domains, -1, 0, lhs_iv_);
  k.rhs.evaluate(domains, -1, 0, rhs_iv_);
  Interval lhs_target, rhs_target;
  if (!side_targets(k.relation, lhs_iv_.back(), rhs_iv_.back(), &lhs_target, &rhs_target)) {
    // A side that is a plain variable names the domain that emptied.
    const FlatNode& lhs_root = k.lhs.nodes.back();
    const FlatNode& rhs_root = k.rhs.nodes.back();
    if (lhs_target.empty() && lhs_root.kind == Expr::Kind::kVariable)
      return fail(c, lhs_root.variable);
    if (rhs_target.empty() && rhs_root.kind == Expr::Kind::kVariable)
      return fail(c, rhs_root.variable);
    return fail(c, -1);
  }
  auto narrow_domain = [&](int variable, Interval target) {
    Domain& d = domains[variable];
    if (d.restrict_to(clamp_to_int64(target.lo), clamp_to_int64(target.hi))) {
      if (d.empty()) return false;
      enqueue_watchers(variable);
    }
    return true;
  };
  int emptied = -1;
  if (!k.lhs.narrow(lhs_iv_, lhs_target, narrowed_, narrow_domain, &emptied))
    return fail(c, emptied);
  if (!k.rhs.narrow(rhs_iv_, rhs_target, narrowed_, narrow_domain, &emptied))
    return fail(c, emptied);
  return true;
}

bool Propagator::filter_values(int c, std::vector<Domain>& domains, Filtering filtering) {
  const Compiled& k = constraints_[c];
  if (c == objective_bound_ && !objective_bound_active_) return true;
  // Before search every small domain is filtered against the others' bounds
  // (interval reasoning with the value pinned). During search only the last
  // undecided variable of a constraint is, where pinning a value is exact.
  int undecided = 0;
  for (int v : k.variables) undecided += !domains[v].fixed();
  if (undecided == 0 || (filtering == Filtering::kLastVariable && undecided != 1)) return true;
  const bool thorough = undecided > 1;
  for (int v : k.variables) {
    Domain& d = domains[v];
    if (d.fixed() || d.size() > kFilterLimit) continue;
    if (d.filter([&](int64_t value) { return supports(k, domains, v, value, thorough); })) {
      if (d.empty()) return fail(c, v);
      enqueue_watchers(v);
    }
  }
  return true;
}

bool Propagator::supports(const Compiled& c, const std::vector<Domain>& domains, int variable,
                          int64_t value, bool thorough) {
  c.lhs.evaluate(domains, variable, value, lhs_iv_);
  c.rhs.evaluate(domains, variable, value, rhs_iv_);
  Interval lhs_target, rhs_target;
  if (!side_targets(c.relation, lhs_iv_.back(), rhs_iv_.back(), &lhs_target, &rhs_target))
    return false;
  if (!thorough) return true;
  // Narrow the trees with the value pinned, without touching the domains.
  auto still_possible = [&](int v, Interval target) {
    if (v == variable) return target.contains(value);
    return domains[v].intersects(clamp_to_int64(target.lo), clamp_to_int64(target.hi));
  };
  int ignored;
  return c.lhs.narrow(lhs_iv_, lhs_target, narrowed_, still_possible, &ignored) &&
         c.rhs.narrow(rhs_iv_, rhs_target, narrowed_, still_possible, &ignored);
}

}  // namespace flashrnn::tune::detail

#include "flashrnn/tune/problem.h"

#include <algorithm>

#include "flashrnn/tune/errors.h"

namespace flashrnn::tune {

std::string_view to_string(Relation relation) {
  switch (relation) {
    case Relation::kEqual: return "==";
    case Relation::kLessEqual: return "<=";
    case Relation::kGreaterEqual: return ">=";
    case Relation::kDivisible: return "%";
  }
  return "?";
}

Expr Problem::add(Variable variable) {
  if (variable.name.empty()) throw ProblemError("a variable needs a name");
  if (int existing = find(variable.name); existing >= 0) {
    const int first_line = variables_[existing].line;
    throw ProblemError("variable '" + variable.name + "' is declared twice" +
                       (first_line ? " (first at line " + std::to_string(first_line) + ")" : ""));
  }
  variables_.push_back(std::move(variable));
  return Expr::variable(int(variables_.size()) - 1);
}

Expr Problem::add_variable(std::string name, Domain domain, ValueOrder order, int line) {
  if (domain.empty()) throw ProblemError("variable '" + name + "' has an empty domain");
  return add(Variable{std::move(name), std::move(domain), order, false, line});
}

Expr Problem::add_parameter(std::string name, std::optional<int64_t> value, int line) {
  // Empty until set: solving with an unset parameter is an error, not a search.
  Domain domain = value ? Domain::single(*value) : Domain::interval(1, 0);
  return add(Variable{std::move(name), std::move(domain), ValueOrder::kAscending, true, line});
}

void Problem::set_parameter(std::string_view name, int64_t value) {
  const int i = find(name);
  if (i < 0 || !variables_[i].is_parameter) {
    std::string known;
    for (const Variable& v : variables_)
      if (v.is_parameter) known += (known.empty() ? "" : ", ") + v.name;
    throw ProblemError("'" + std::string(name) + "' is not a parameter of this problem" +
                       (known.empty() ? " (it has none)" : " (parameters: " + known + ")"));
  }
  variables_[i].domain = Domain::single(value);
}

void Problem::set_domain(int variable, Domain domain) {
  if (variable < 0 || size_t(variable) >= variables_.size())
    throw ProblemError("set_domain: no variable " + std::to_string(variable));
  if (domain.empty())
    throw ProblemError("set_domain: the new domain of '" + variables_[variable].name +
                       "' is empty");
  variables_[variable].domain = std::move(domain);
}

int Problem::find(std::string_view name) const {
  for (size_t i = 0; i < variables_.size(); ++i)
    if (variables_[i].name == name) return int(i);
  return -1;
}

int Problem::index_of(std::string_view name) const {
  const int i = find(name);
  if (i < 0) throw ProblemError("unknown variable '" + std::string(name) + "'");
  return i;
}

void Problem::check_variables_exist(const Expr& e, const char* where) const {
  std::vector<int> used;
  e.collect_variables(used);
  for (int v : used)
    if (size_t(v) >= variables_.size())
      throw ProblemError(std::string(where) + " uses variable " + std::to_string(v) +
                         " but the problem has " + std::to_string(variables_.size()));
}

int Problem::add_constraint(Expr lhs, Relation relation, Expr rhs, std::string label, int line) {
  check_variables_exist(lhs, "a constraint");
  check_variables_exist(rhs, "a constraint");
  if (!label.empty())
    for (const Constraint& c : constraints_)
      if (c.label == label)
        throw ProblemError("constraint label '" + label + "' is used twice" +
                           (c.line ? " (first at line " + std::to_string(c.line) + ")" : ""));
  constraints_.push_back(Constraint{std::move(lhs), relation, std::move(rhs), std::move(label), line});
  return int(constraints_.size()) - 1;
}

void Problem::set_objective(Expr expr, Goal goal) {
  check_variables_exist(expr, "the objective");
  objective_ = Objective{std::move(expr), goal};
}

void Problem::set_search_order(const std::vector<int>& first) {
  for (size_t i = 0; i < first.size(); ++i) {
    if (first[i] < 0 || size_t(first[i]) >= variables_.size())
      throw ProblemError("search order names variable " + std::to_string(first[i]) +
                         " but the problem has " + std::to_string(variables_.size()));
    if (std::find(first.begin(), first.begin() + i, first[i]) != first.begin() + i)
      throw ProblemError("search order lists '" + variables_[first[i]].name + "' twice");
  }
  search_first_ = first;
}

std::vector<int> Problem::search_order() const {
  std::vector<int> order = search_first_;
  for (size_t i = 0; i < variables_.size(); ++i)
    if (std::find(search_first_.begin(), search_first_.end(), int(i)) == search_first_.end())
      order.push_back(int(i));
  return order;
}

std::vector<std::string> Problem::names() const {
  std::vector<std::string> names;
  for (const Variable& v : variables_) names.push_back(v.name);
  return names;
}

std::string Problem::describe(int constraint) const {
  const Constraint& c = constraints_.at(constraint);
  const std::vector<std::string> n = names();
  std::string text;
  if (c.relation == Relation::kDivisible) {
    // % binds like *: a sum on the left and a sum or product on the right need parentheses.
    std::string dividend = c.lhs.to_string(n), divisor = c.rhs.to_string(n);
    if (c.lhs.kind() == Expr::Kind::kSum) dividend = "(" + dividend + ")";
    if (c.rhs.kind() == Expr::Kind::kSum || c.rhs.kind() == Expr::Kind::kProduct)
      divisor = "(" + divisor + ")";
    text = dividend + " % " + divisor + " == 0";
  } else {
    text = c.lhs.to_string(n) + " " + std::string(to_string(c.relation)) + " " + c.rhs.to_string(n);
  }
  std::string where = c.label.empty() ? "constraint " + std::to_string(constraint + 1)
                                      : "constraint '" + c.label + "'";
  if (c.line) where += " (line " + std::to_string(c.line) + ")";
  return where + ": " + text;
}

void Problem::check_parameters_set() const {
  std::string unset;
  int count = 0;
  for (const Variable& v : variables_)
    if (v.is_parameter && v.domain.empty()) {
      unset += (count++ ? ", '" : "'") + v.name + "'" +
               (v.line ? " (line " + std::to_string(v.line) + ")" : "");
    }
  if (count)
    throw ProblemError((count == 1 ? "parameter " + unset + " has no value"
                                   : "parameters " + unset + " have no value") +
                       (count == 1 ? "; set it before solving" : "; set them before solving"));
}

bool holds(const Constraint& c, const std::vector<int64_t>& values) {
  const int64_t lhs = c.lhs.evaluate(values), rhs = c.rhs.evaluate(values);
  switch (c.relation) {
    case Relation::kEqual: return lhs == rhs;
    case Relation::kLessEqual: return lhs <= rhs;
    case Relation::kGreaterEqual: return lhs >= rhs;
    case Relation::kDivisible: return rhs != 0 && lhs % rhs == 0;
  }
  return false;
}

}  // namespace flashrnn::tune

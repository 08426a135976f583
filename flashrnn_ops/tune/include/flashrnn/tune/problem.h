// A constraint problem: integer variables with domains, constraints between
// expressions, an optional objective, and the order in which search decides
// the variables.
//
//   Problem p;
//   Expr warps = p.add_variable("warps", Domain::interval(1, 32));
//   Expr threads = p.add_variable("threads", Domain::multiples_of(32, 32, 1024));
//   p.add_constraint(threads, Relation::kEqual, Expr::constant(32) * warps);
//   p.set_objective(threads, Goal::kMaximize);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "flashrnn/tune/domain.h"
#include "flashrnn/tune/expr.h"

namespace flashrnn::tune {

// In which order search tries a variable's values.
enum class ValueOrder { kAscending, kDescending };

struct Variable {
  std::string name;
  Domain domain;
  ValueOrder value_order = ValueOrder::kAscending;
  // A parameter is fixed from outside (set_parameter) before solving: the shape
  // of a kernel, the limits of a device. Its domain is empty until then.
  bool is_parameter = false;
  int line = 0;  // where it was declared, 0 when built in code
};

enum class Relation {
  kEqual,         // lhs == rhs
  kLessEqual,     // lhs <= rhs
  kGreaterEqual,  // lhs >= rhs
  kDivisible,     // lhs % rhs == 0: rhs is not 0 and divides lhs
};

struct Constraint {
  Expr lhs;
  Relation relation;
  Expr rhs;
  std::string label;  // optional name, used in explanations
  int line = 0;
};

// Whether `c` holds with every variable at its value in `values`.
bool holds(const Constraint& c, const std::vector<int64_t>& values);

enum class Goal { kMinimize, kMaximize };

struct Objective {
  Expr expr;
  Goal goal;
};

class Problem {
 public:
  // Returns the variable as an expression. Throws ProblemError on a duplicate
  // name or an empty domain.
  Expr add_variable(std::string name, Domain domain, ValueOrder order = ValueOrder::kAscending,
                    int line = 0);
  // A parameter, optionally with a default value.
  Expr add_parameter(std::string name, std::optional<int64_t> value = std::nullopt, int line = 0);
  // Throws ProblemError if `name` is not a parameter of this problem.
  void set_parameter(std::string_view name, int64_t value);
  // Replaces a variable's domain (to fix or narrow it from outside). Throws on
  // an empty domain.
  void set_domain(int variable, Domain domain);

  // -1 when there is no such variable.
  int find(std::string_view name) const;
  // Throws ProblemError naming the unknown variable.
  int index_of(std::string_view name) const;
  Expr var(std::string_view name) const { return Expr::variable(index_of(name)); }

  // Throws ProblemError if an expression uses a variable this problem lacks.
  int add_constraint(Expr lhs, Relation relation, Expr rhs, std::string label = {}, int line = 0);
  void set_objective(Expr expr, Goal goal);
  // Search decides these variables first, in this order, then the others in
  // declaration order.
  void set_search_order(const std::vector<int>& first);

  const std::vector<Variable>& variables() const { return variables_; }
  const std::vector<Constraint>& constraints() const { return constraints_; }
  const std::optional<Objective>& objective() const { return objective_; }
  // Every variable, in the order search decides them.
  std::vector<int> search_order() const;
  std::vector<std::string> names() const;

  // "smem_fits (line 40): smem_bytes <= smem_per_block".
  std::string describe(int constraint) const;
  // Throws ProblemError naming each parameter that has no value.
  void check_parameters_set() const;

 private:
  Expr add(Variable variable);
  void check_variables_exist(const Expr& e, const char* where) const;

  std::vector<Variable> variables_;
  std::vector<Constraint> constraints_;
  std::optional<Objective> objective_;
  std::vector<int> search_first_;
};

std::string_view to_string(Relation relation);

}  // namespace flashrnn::tune

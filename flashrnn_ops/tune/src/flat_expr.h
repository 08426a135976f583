// An expression flattened for the propagator: nodes in post-order (operands
// before the node that uses them), so one pass up evaluates intervals and one
// pass down narrows them.
#pragma once

#include <cstdint>
#include <vector>

#include "flashrnn/tune/domain.h"
#include "flashrnn/tune/expr.h"
#include "interval.h"

namespace flashrnn::tune::detail {

struct FlatNode {
  Expr::Kind kind;
  int64_t value = 0;   // kConstant
  int variable = -1;   // kVariable
  int first = 0;       // kSum, kProduct: operands are operand_list[first, first + count)
  int count = 0;
};

struct FlatExpr {
  std::vector<FlatNode> nodes;
  std::vector<int> operand_list;

  static FlatExpr from(const Expr& e);
  int root() const { return int(nodes.size()) - 1; }
  // Sorted distinct variables.
  std::vector<int> variables() const;

  // Interval of every node given the domains; variable `pinned` (if >= 0) is
  // taken to be `pinned_value`. Writes `out` (one interval per node).
  void evaluate(const std::vector<Domain>& domains, int pinned, int64_t pinned_value,
                std::vector<Interval>& out) const;
  // Narrows the node intervals `iv` downwards from the root, which must already
  // hold its target. Calls narrow_variable(variable, interval) for each
  // occurrence of a variable and stops when it returns false. Returns false when
  // an interval became empty (and sets *empty_variable to the variable, or -1
  // when an inner node emptied).
  template <class NarrowVariable>
  bool narrow(std::vector<Interval>& iv, NarrowVariable&& narrow_variable,
              int* empty_variable) const;

 private:
  int append(const Expr& e);
};

template <class NarrowVariable>
bool FlatExpr::narrow(std::vector<Interval>& iv, NarrowVariable&& narrow_variable,
                      int* empty_variable) const {
  *empty_variable = -1;
  // Parents come after their operands, so walking backwards visits every node
  // after the node that narrows it.
  for (int i = root(); i >= 0; --i) {
    const FlatNode& n = nodes[i];
    const Interval target = iv[i];
    if (target.empty()) return false;
    switch (n.kind) {
      case Expr::Kind::kConstant: break;
      case Expr::Kind::kVariable:
        if (!narrow_variable(n.variable, target)) {
          *empty_variable = n.variable;
          return false;
        }
        break;
      case Expr::Kind::kSum: {
        Wide lo_sum = 0, hi_sum = 0;
        for (int k = 0; k < n.count; ++k) {
          lo_sum += iv[operand_list[n.first + k]].lo;
          hi_sum += iv[operand_list[n.first + k]].hi;
        }
        // operand ∈ target − (sum of the others)
        for (int k = 0; k < n.count; ++k) {
          Interval& op = iv[operand_list[n.first + k]];
          const Interval others{lo_sum - op.lo, hi_sum - op.hi};
          op = intersect(op, Interval{target.lo - others.hi, target.hi - others.lo});
          if (op.empty()) return false;
        }
        break;
      }
      case Expr::Kind::kProduct: {
        Interval& a = iv[operand_list[n.first]];
        Interval& b = iv[operand_list[n.first + 1]];
        a = intersect(a, quotient(target, b));
        if (a.empty()) return false;
        b = intersect(b, quotient(target, a));
        if (b.empty()) return false;
        break;
      }
    }
  }
  return true;
}

}  // namespace flashrnn::tune::detail

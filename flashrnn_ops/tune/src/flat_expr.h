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
  // Narrows the node intervals `iv` (as evaluate() left them) downwards from
  // the root, given the root's target. Calls narrow_variable(variable, interval)
  // for each narrowed occurrence of a variable and stops when it returns false.
  // Returns false when an interval became empty (and sets *empty_variable to the
  // variable, or -1 when an inner node emptied). `narrowed` is scratch space.
  template <class NarrowVariable>
  bool narrow(std::vector<Interval>& iv, Interval root_target, std::vector<char>& narrowed,
              NarrowVariable&& narrow_variable, int* empty_variable) const;

 private:
  int append(const Expr& e);
};

template <class NarrowVariable>
bool FlatExpr::narrow(std::vector<Interval>& iv, Interval root_target, std::vector<char>& narrowed,
                      NarrowVariable&& narrow_variable, int* empty_variable) const {
  *empty_variable = -1;
  narrowed.assign(nodes.size(), 0);
  // Narrows node k to `target`; only a node that lost values can narrow its operands.
  auto narrow_node = [&](int k, Interval target) {
    const Interval before = iv[k];
    iv[k] = intersect(before, target);
    if (iv[k].lo != before.lo || iv[k].hi != before.hi) narrowed[k] = 1;
    return !iv[k].empty();
  };
  if (!narrow_node(root(), root_target)) return false;
  // Parents come after their operands, so walking backwards visits every node
  // after the node that narrows it.
  for (int i = root(); i >= 0; --i) {
    if (!narrowed[i]) continue;
    const FlatNode& n = nodes[i];
    const Interval target = iv[i];
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
          const int op = operand_list[n.first + k];
          const Interval others{lo_sum - iv[op].lo, hi_sum - iv[op].hi};
          if (!narrow_node(op, Interval{target.lo - others.hi, target.hi - others.lo})) return false;
        }
        break;
      }
      case Expr::Kind::kProduct: {
        const int a = operand_list[n.first], b = operand_list[n.first + 1];
        if (!narrow_node(a, quotient(target, iv[b]))) return false;
        if (!narrow_node(b, quotient(target, iv[a]))) return false;
        break;
      }
    }
  }
  return true;
}

}  // namespace flashrnn::tune::detail

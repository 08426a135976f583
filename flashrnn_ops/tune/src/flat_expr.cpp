#include "flat_expr.h"

#include <algorithm>

namespace flashrnn::tune::detail {

FlatExpr FlatExpr::from(const Expr& e) {
  FlatExpr f;
  f.append(e);
  return f;
}

int FlatExpr::append(const Expr& e) {
  FlatNode node{e.kind()};
  if (e.kind() == Expr::Kind::kConstant) node.value = e.constant_value();
  if (e.kind() == Expr::Kind::kVariable) node.variable = e.variable_index();
  std::vector<int> operands;
  for (const Expr& op : e.operands()) operands.push_back(append(op));
  node.first = int(operand_list.size());
  node.count = int(operands.size());
  operand_list.insert(operand_list.end(), operands.begin(), operands.end());
  nodes.push_back(node);
  return int(nodes.size()) - 1;
}

std::vector<int> FlatExpr::variables() const {
  std::vector<int> vars;
  for (const FlatNode& n : nodes)
    if (n.kind == Expr::Kind::kVariable) vars.push_back(n.variable);
  std::sort(vars.begin(), vars.end());
  vars.erase(std::unique(vars.begin(), vars.end()), vars.end());
  return vars;
}

void FlatExpr::evaluate(const std::vector<Domain>& domains, int pinned, int64_t pinned_value,
                        std::vector<Interval>& out) const {
  out.resize(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const FlatNode& n = nodes[i];
    switch (n.kind) {
      case Expr::Kind::kConstant: out[i] = {n.value, n.value}; break;
      case Expr::Kind::kVariable:
        if (n.variable == pinned) {
          out[i] = {pinned_value, pinned_value};
        } else {
          const Domain& d = domains[n.variable];
          out[i] = d.empty() ? Interval{1, 0} : Interval{d.min(), d.max()};
        }
        break;
      case Expr::Kind::kSum: {
        Interval sum{0, 0};
        for (int k = 0; k < n.count; ++k) {
          const Interval& op = out[operand_list[n.first + k]];
          sum.lo += op.lo;
          sum.hi += op.hi;
        }
        out[i] = sum;
        break;
      }
      case Expr::Kind::kProduct:
        out[i] = product(out[operand_list[n.first]], out[operand_list[n.first + 1]]);
        break;
    }
  }
}

}  // namespace flashrnn::tune::detail

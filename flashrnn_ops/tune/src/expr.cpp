#include "flashrnn/tune/expr.h"

#include "flashrnn/tune/domain.h"
#include "flashrnn/tune/errors.h"

namespace flashrnn::tune {

struct Expr::Node {
  Kind kind;
  int64_t value = 0;  // kConstant
  int index = -1;     // kVariable
  std::vector<Expr> operands;
};

Expr Expr::constant(int64_t value) {
  if (value < -kMaxMagnitude || value > kMaxMagnitude)
    throw ProblemError("constant " + std::to_string(value) +
                       " is outside the supported range ±(2^62 - 1)");
  return Expr(std::make_shared<const Node>(Node{Kind::kConstant, value, -1, {}}));
}

Expr Expr::variable(int index) {
  if (index < 0) throw ProblemError("variable index " + std::to_string(index) + " is negative");
  return Expr(std::make_shared<const Node>(Node{Kind::kVariable, 0, index, {}}));
}

Expr operator+(const Expr& a, const Expr& b) {
  std::vector<Expr> terms;
  for (const Expr* e : {&a, &b}) {
    if (e->kind() == Expr::Kind::kSum)
      terms.insert(terms.end(), e->operands().begin(), e->operands().end());
    else
      terms.push_back(*e);
  }
  return Expr(std::make_shared<const Expr::Node>(Expr::Node{Expr::Kind::kSum, 0, -1, terms}));
}

Expr operator*(const Expr& a, const Expr& b) {
  return Expr(std::make_shared<const Expr::Node>(Expr::Node{Expr::Kind::kProduct, 0, -1, {a, b}}));
}

Expr operator-(const Expr& a, const Expr& b) { return a + (-b); }

Expr Expr::operator-() const {
  if (kind() == Kind::kConstant) return constant(-constant_value());
  return constant(-1) * *this;
}

Expr::Kind Expr::kind() const { return node_->kind; }
int64_t Expr::constant_value() const { return node_->value; }
int Expr::variable_index() const { return node_->index; }
const std::vector<Expr>& Expr::operands() const { return node_->operands; }

namespace {

using Wide = __int128;

int64_t checked(Wide v) {
  if (v < -kMaxMagnitude || v > kMaxMagnitude)
    throw ProblemError("expression value overflows the supported range ±(2^62 - 1)");
  return int64_t(v);
}

}  // namespace

int64_t Expr::evaluate(const std::vector<int64_t>& values) const {
  switch (kind()) {
    case Kind::kConstant: return constant_value();
    case Kind::kVariable:
      if (size_t(variable_index()) >= values.size())
        throw ProblemError("expression uses variable " + std::to_string(variable_index()) +
                           " but only " + std::to_string(values.size()) + " values were given");
      return values[variable_index()];
    case Kind::kSum: {
      Wide sum = 0;
      for (const Expr& e : operands()) sum += e.evaluate(values);
      return checked(sum);
    }
    case Kind::kProduct:
      return checked(Wide(operands()[0].evaluate(values)) * operands()[1].evaluate(values));
  }
  return 0;
}

void Expr::collect_variables(std::vector<int>& out) const {
  if (kind() == Kind::kVariable) out.push_back(variable_index());
  for (const Expr& e : operands()) e.collect_variables(out);
}

std::string Expr::to_string(const std::vector<std::string>& names) const {
  switch (kind()) {
    case Kind::kConstant: return std::to_string(constant_value());
    case Kind::kVariable:
      return size_t(variable_index()) < names.size() ? names[variable_index()]
                                                       : "v" + std::to_string(variable_index());
    case Kind::kSum: {
      std::string s;
      for (size_t i = 0; i < operands().size(); ++i) {
        const Expr& e = operands()[i];
        // a + (-1)·b prints as a - b.
        const bool negated = e.kind() == Kind::kProduct &&
                             e.operands()[0].kind() == Kind::kConstant &&
                             e.operands()[0].constant_value() == -1;
        const bool negative_constant = e.kind() == Kind::kConstant && e.constant_value() < 0;
        std::string text;
        if (negated) {
          text = e.operands()[1].to_string(names);
          if (e.operands()[1].kind() == Kind::kSum) text = "(" + text + ")";
        } else if (negative_constant && i > 0) {
          text = std::to_string(-e.constant_value());  // a + (-1) prints as a - 1
        } else {
          text = e.to_string(names);
        }
        if (i == 0)
          s = negated ? "-" + text : text;
        else
          s += (negated || negative_constant ? " - " : " + ") + text;
      }
      return s;
    }
    case Kind::kProduct: {
      auto factor = [&](const Expr& e) {
        return e.kind() == Kind::kSum ? "(" + e.to_string(names) + ")" : e.to_string(names);
      };
      return factor(operands()[0]) + " * " + factor(operands()[1]);
    }
  }
  return "?";
}

}  // namespace flashrnn::tune

// Integer expressions over the variables of a problem: constants, variables,
// sums and products (subtraction is a sum with a product by −1). Immutable;
// copies share their nodes.
//
//   Expr threads = Expr::variable(0), warps = Expr::variable(1);
//   Expr e = threads - Expr::constant(32) * warps;
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace flashrnn::tune {

class Expr {
 public:
  enum class Kind { kConstant, kVariable, kSum, kProduct };

  static Expr constant(int64_t value);
  static Expr variable(int index);

  // Sums are n-ary (nested sums are flattened); products are binary.
  friend Expr operator+(const Expr& a, const Expr& b);
  friend Expr operator-(const Expr& a, const Expr& b);
  friend Expr operator*(const Expr& a, const Expr& b);
  Expr operator-() const;

  Kind kind() const;
  int64_t constant_value() const;  // kConstant only
  int variable_index() const;      // kVariable only
  const std::vector<Expr>& operands() const;  // kSum and kProduct

  // The value when variable i has values[i]. Throws ProblemError if a
  // subexpression leaves ±(2^62 − 1).
  int64_t evaluate(const std::vector<int64_t>& values) const;
  // Appends the index of every variable that occurs (with repeats).
  void collect_variables(std::vector<int>& out) const;
  // Infix text; names[i] names variable i.
  std::string to_string(const std::vector<std::string>& names) const;

 private:
  struct Node;
  explicit Expr(std::shared_ptr<const Node> node) : node_(std::move(node)) {}
  std::shared_ptr<const Node> node_;
};

}  // namespace flashrnn::tune

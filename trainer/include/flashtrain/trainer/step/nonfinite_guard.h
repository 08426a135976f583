// The NaN/Inf guard: a step whose loss or gradient norm is not finite is
// skipped (no update), counted, and training stops once
// training.max_nonfinite_steps of them come in a row.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace flashtrain::trainer {

class NonfiniteGuard {
 public:
  explicit NonfiniteGuard(std::int64_t max_in_row) : max_in_row_(max_in_row) {
    if (max_in_row < 1)
      throw std::invalid_argument("NonfiniteGuard: max_in_row must be >= 1, got " + std::to_string(max_in_row));
  }

  // Records one step; returns whether its update may be applied.
  bool record(bool finite) {
    if (finite) {
      in_row_ = 0;
      return true;
    }
    ++in_row_;
    ++total_;
    return false;
  }

  // Whether max_in_row non-finite steps came in a row: time to stop.
  bool exhausted() const { return in_row_ >= max_in_row_; }
  std::int64_t in_row() const { return in_row_; }
  std::int64_t total() const { return total_; }
  std::int64_t max_in_row() const { return max_in_row_; }
  // For resuming from a checkpoint.
  void restore(std::int64_t in_row, std::int64_t total) {
    in_row_ = in_row;
    total_ = total;
  }

 private:
  std::int64_t max_in_row_;
  std::int64_t in_row_ = 0;
  std::int64_t total_ = 0;
};

}  // namespace flashtrain::trainer

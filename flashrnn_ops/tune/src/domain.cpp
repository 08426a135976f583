#include "flashrnn/tune/domain.h"

#include <algorithm>
#include <sstream>
#include <string>

#include "flashrnn/tune/errors.h"

namespace flashrnn::tune {
namespace {

void check_magnitude(int64_t v, const char* what) {
  if (v < -kMaxMagnitude || v > kMaxMagnitude)
    throw ProblemError("domain " + std::string(what) + " " + std::to_string(v) +
                       " is outside the supported range ±(2^62 - 1)");
}

// Floor and ceiling of a / b for b > 0 (C++ division truncates towards zero).
int64_t floor_div(int64_t a, int64_t b) { return a / b - (a % b != 0 && a < 0 ? 1 : 0); }
int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0 && a > 0 ? 1 : 0); }

}  // namespace

Domain Domain::interval(int64_t lo, int64_t hi) { return multiples_of(1, lo, hi); }

Domain Domain::multiples_of(int64_t step, int64_t lo, int64_t hi) {
  if (step <= 0)
    throw ProblemError("'multiple of " + std::to_string(step) + "' needs a positive step");
  check_magnitude(lo, "bound");
  check_magnitude(hi, "bound");
  Domain d;
  d.step_ = step;
  d.lo_ = ceil_div(lo, step) * step;
  d.hi_ = floor_div(hi, step) * step;
  if (d.lo_ > d.hi_) d.lo_ = 0, d.hi_ = -1, d.step_ = 1;
  return d;
}

Domain Domain::powers_of_two(int64_t lo, int64_t hi) {
  check_magnitude(lo, "bound");
  check_magnitude(hi, "bound");
  std::vector<int64_t> powers;
  for (int64_t p = 1; p <= hi; p *= 2) {
    if (p >= lo) powers.push_back(p);
    if (p > kMaxMagnitude / 2) break;
  }
  return values(std::move(powers));
}

Domain Domain::values(std::vector<int64_t> values) {
  for (int64_t v : values) check_magnitude(v, "value");
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  Domain d;
  d.set_explicit(std::move(values));
  return d;
}

Domain Domain::single(int64_t value) { return interval(value, value); }

void Domain::set_explicit(std::vector<int64_t> sorted_unique) {
  const size_t n = sorted_unique.size();
  const int64_t step = n >= 2 ? sorted_unique[1] - sorted_unique[0] : 1;
  bool evenly_spaced = true;
  for (size_t i = 2; i < n && evenly_spaced; ++i)
    evenly_spaced = sorted_unique[i] - sorted_unique[i - 1] == step;
  if (n > 0 && evenly_spaced) {
    explicit_ = false;
    values_.clear();
    lo_ = sorted_unique.front();
    hi_ = sorted_unique.back();
    step_ = step;
    return;
  }
  explicit_ = true;
  values_ = std::move(sorted_unique);
}

bool Domain::contains(int64_t value) const {
  if (explicit_) return std::binary_search(values_.begin(), values_.end(), value);
  return value >= lo_ && value <= hi_ && (value - lo_) % step_ == 0;
}

bool Domain::intersects(int64_t lo, int64_t hi) const {
  if (empty() || lo > hi || hi < min() || lo > max()) return false;
  if (explicit_) {
    auto it = std::lower_bound(values_.begin(), values_.end(), lo);
    return it != values_.end() && *it <= hi;
  }
  // The first grid value at or above lo.
  const int64_t first = lo <= lo_ ? lo_ : lo_ + ceil_div(lo - lo_, step_) * step_;
  return first <= hi;
}

bool Domain::restrict_to(int64_t lo, int64_t hi) {
  if (empty()) return false;
  if (lo <= min() && hi >= max()) return false;
  if (explicit_) {
    auto first = std::lower_bound(values_.begin(), values_.end(), lo);
    auto last = std::upper_bound(first, values_.end(), hi);
    values_ = std::vector<int64_t>(first, last);
    return true;
  }
  if (lo > hi_ || hi < lo_) {
    lo_ = 0, hi_ = -1, step_ = 1;
    return true;
  }
  const int64_t new_lo = lo <= lo_ ? lo_ : lo_ + ceil_div(lo - lo_, step_) * step_;
  const int64_t new_hi = hi >= hi_ ? hi_ : lo_ + floor_div(hi - lo_, step_) * step_;
  lo_ = new_lo;
  hi_ = new_hi;
  if (lo_ > hi_) lo_ = 0, hi_ = -1, step_ = 1;
  return true;
}

void Domain::assign(int64_t value) {
  const bool present = contains(value);
  explicit_ = false;
  values_.clear();
  step_ = 1;
  lo_ = present ? value : 0;
  hi_ = present ? value : -1;
}

std::string Domain::to_string() const {
  std::ostringstream s;
  // A progression not anchored at multiples of its step (what filtering can
  // leave) has no short form in the text format: list it.
  if (explicit_ || empty() || lo_ % step_ != 0) {
    s << "{";
    for (uint64_t i = 0, n = size(); i < n; ++i) s << (i ? ", " : "") << value_at(i);
    s << "}";
  } else {
    s << lo_ << ".." << hi_;
    if (step_ != 1) s << " multiple of " << step_;
  }
  return s.str();
}

bool Domain::operator==(const Domain& other) const {
  if (size() != other.size()) return false;
  for (uint64_t i = 0, n = size(); i < n; ++i)
    if (value_at(i) != other.value_at(i)) return false;
  return true;
}

}  // namespace flashrnn::tune

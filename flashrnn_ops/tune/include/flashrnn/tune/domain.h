// The finite set of values an integer variable may still take. Two forms:
// an arithmetic progression lo, lo+step, ..., hi (intervals, multiples of m)
// and an explicit sorted set (value lists, powers of two, or a progression that
// lost interior values). The solver only ever narrows a domain.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace flashrnn::tune {

// Values and constants are limited to ±(2^62 − 1) so that differences of two
// values and sizes of domains fit in 64 bits; factories throw ProblemError beyond.
inline constexpr int64_t kMaxMagnitude = (int64_t{1} << 62) - 1;

class Domain {
 public:
  // Every integer in lo..hi.
  static Domain interval(int64_t lo, int64_t hi);
  // The multiples of `step` (> 0) in lo..hi.
  static Domain multiples_of(int64_t step, int64_t lo, int64_t hi);
  // The powers of two 1, 2, 4, ... in lo..hi.
  static Domain powers_of_two(int64_t lo, int64_t hi);
  // Exactly these values (order and duplicates do not matter).
  static Domain values(std::vector<int64_t> values);
  static Domain single(int64_t value);

  // The accessors are inline: the propagator calls them in its inner loops.
  bool empty() const { return explicit_ ? values_.empty() : lo_ > hi_; }
  uint64_t size() const {
    if (explicit_) return values_.size();
    return lo_ > hi_ ? 0 : uint64_t(hi_ - lo_) / uint64_t(step_) + 1;
  }
  bool fixed() const { return explicit_ ? values_.size() == 1 : lo_ == hi_; }
  // min, max and value_at need a non-empty domain.
  int64_t min() const { return explicit_ ? values_.front() : lo_; }
  int64_t max() const { return explicit_ ? values_.back() : hi_; }
  // The i-th smallest value, 0 <= i < size().
  int64_t value_at(uint64_t i) const { return explicit_ ? values_[i] : lo_ + int64_t(i) * step_; }
  bool contains(int64_t value) const;
  // Whether some value lies in lo..hi.
  bool intersects(int64_t lo, int64_t hi) const;

  // Narrowing; each returns true when the domain lost a value.
  bool restrict_to(int64_t lo, int64_t hi);
  void assign(int64_t value);  // narrows to {value}; empty if value is not in the domain
  // Keeps the values v with keep(v). Visits every value: meant for small domains.
  template <class Keep>
  bool filter(Keep&& keep);

  // "0..64", "16..768 multiple of 16", "{1, 2, 4}", "{}".
  std::string to_string() const;
  bool operator==(const Domain& other) const;

 private:
  Domain() = default;
  // Keeps evenly spaced values (what filtering a progression usually leaves)
  // in the compact progression form, which copies without allocating.
  void set_explicit(std::vector<int64_t> sorted_unique);

  bool explicit_ = false;
  // Progression form: values lo_ + k·step_ up to hi_ (hi_ lies on the grid);
  // empty when lo_ > hi_.
  int64_t lo_ = 0;
  int64_t hi_ = -1;
  int64_t step_ = 1;
  // Explicit form: sorted, no duplicates.
  std::vector<int64_t> values_;
};

template <class Keep>
bool Domain::filter(Keep&& keep) {
  const uint64_t n = size();
  std::vector<int64_t> kept;
  kept.reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    const int64_t v = value_at(i);
    if (keep(v)) kept.push_back(v);
  }
  if (kept.size() == n) return false;
  set_explicit(std::move(kept));
  return true;
}

}  // namespace flashrnn::tune

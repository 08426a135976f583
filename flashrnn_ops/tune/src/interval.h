// Interval arithmetic on 128-bit integers for the propagator. Expression values
// are limited to ±(2^62 − 1) (checked before solving), so sums of a few
// operands, products of two and the targets derived from them never overflow.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>

namespace flashrnn::tune::detail {

using Wide = __int128;

// Wider than any value an expression can take: "no bound".
inline constexpr Wide kUnbounded = Wide(1) << 100;

struct Interval {
  Wide lo;
  Wide hi;

  bool empty() const { return lo > hi; }
  bool fixed() const { return lo == hi; }
  bool contains(Wide v) const { return lo <= v && v <= hi; }
};

inline Interval everything() { return {-kUnbounded, kUnbounded}; }

inline Interval intersect(Interval a, Interval b) {
  return {std::max(a.lo, b.lo), std::min(a.hi, b.hi)};
}

inline Interval hull(Interval a, Interval b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
}

inline Interval product(Interval a, Interval b) {
  const Wide c[4] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
  return {std::min({c[0], c[1], c[2], c[3]}), std::max({c[0], c[1], c[2], c[3]})};
}

inline bool fits_int64(Wide v) { return v >= Wide(INT64_MIN) && v <= Wide(INT64_MAX); }

// Floor and ceiling of a / b, b != 0 (C++ division truncates towards zero).
// 128-bit division is a library call; operands usually fit in 64 bits.
inline Wide floor_div(Wide a, Wide b) {
  if (fits_int64(a) && fits_int64(b) && !(b == -1 && a == Wide(INT64_MIN))) {
    const int64_t x = int64_t(a), y = int64_t(b), q = x / y;
    return (x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q;
  }
  const Wide q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
inline Wide ceil_div(Wide a, Wide b) { return -floor_div(-a, b); }

// The integers x for which x·y lies in z for some integer y in `y` (a hull:
// it may keep some x without such a y, never drops one with).
inline Interval quotient(Interval z, Interval y) {
  if (z.contains(0) && y.contains(0)) return everything();  // x·0 = 0 fits any x
  if (y.fixed()) {  // the common case: a factor that is a constant or decided
    if (y.lo == 0) return {1, 0};
    return y.lo > 0 ? Interval{ceil_div(z.lo, y.lo), floor_div(z.hi, y.lo)}
                    : Interval{ceil_div(z.hi, y.lo), floor_div(z.lo, y.lo)};
  }
  Interval result{1, 0};
  // y = 0 cannot help here, so split y into its negative and positive parts;
  // on each part x = z / y is monotone in both, extremes lie at the corners.
  for (Interval part : {Interval{y.lo, std::min(y.hi, Wide(-1))},
                        Interval{std::max(y.lo, Wide(1)), y.hi}}) {
    if (part.empty()) continue;
    Interval q{kUnbounded, -kUnbounded};
    for (Wide zz : {z.lo, z.hi})
      for (Wide yy : {part.lo, part.hi}) {
        q.lo = std::min(q.lo, ceil_div(zz, yy));
        q.hi = std::max(q.hi, floor_div(zz, yy));
      }
    if (!q.empty()) result = hull(result, q);
  }
  return result;
}

// Whether some multiple of k (> 0) lies in v.
inline bool has_multiple(Interval v, Wide k) { return ceil_div(v.lo, k) <= floor_div(v.hi, k); }

}  // namespace flashrnn::tune::detail

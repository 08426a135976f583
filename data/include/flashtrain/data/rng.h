// A small counter-based random generator with a fixed, documented algorithm,
// so every sample is the same on every platform and standard library
// (std::uniform_int_distribution is not specified bit for bit).
//
// The generator is SplitMix64 (Steele, Lea, Flood 2014): the state advances
// by a constant and each output is a bijective 64-bit mix of the state.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string_view>

namespace flashtrain::data {

// SplitMix64's output function, a bijection on 64-bit values.
inline std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// FNV-1a of a name: stable across runs and builds (std::hash is not).
inline std::uint64_t hash_name(std::string_view name) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

// One seed from several parts, e.g. (task, seed, index): each part is folded
// in through mix64, so nearby tuples give unrelated streams.
inline std::uint64_t derive_seed(std::initializer_list<std::uint64_t> parts) {
  std::uint64_t h = 0x9e3779b97f4a7c15ULL;
  for (const std::uint64_t part : parts) h = mix64(h ^ mix64(part + 0x9e3779b97f4a7c15ULL));
  return h;
}

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next() {
    state_ += 0x9e3779b97f4a7c15ULL;
    return mix64(state_);
  }

  // Uniform in [0, n), without modulo bias: draws below 2^64 mod n are
  // rejected so that every residue has the same number of preimages.
  std::uint64_t below(std::uint64_t n) {
    if (n == 0) throw std::invalid_argument("Rng::below(0)");
    const std::uint64_t threshold = (0 - n) % n;  // 2^64 mod n
    for (;;) {
      const std::uint64_t x = next();
      if (x >= threshold) return x % n;
    }
  }

  // Uniform in [lo, hi] (both included).
  std::int64_t between(std::int64_t lo, std::int64_t hi) {
    if (hi < lo) throw std::invalid_argument("Rng::between: empty range");
    return lo + static_cast<std::int64_t>(below(static_cast<std::uint64_t>(hi - lo) + 1));
  }

 private:
  std::uint64_t state_;
};

}  // namespace flashtrain::data

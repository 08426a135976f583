// FNV-1a (64 bit) checksums of checkpoint and export files, recorded in their
// manifest.json and checked when they are read back. It detects truncated or
// corrupted files, not tampering (it is not a cryptographic hash).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace flashtrain::trainer {

class Fnv1a64 {
 public:
  void update(const void* data, std::size_t bytes);
  std::uint64_t value() const { return hash_; }
  // 16 lowercase hex digits.
  std::string hex() const;

 private:
  std::uint64_t hash_ = 0xcbf29ce484222325ULL;  // the FNV offset basis
};

// The checksum of a whole file (hex); throws std::runtime_error if it cannot be read.
std::string fnv1a64_of_file(const std::string& path);

}  // namespace flashtrain::trainer

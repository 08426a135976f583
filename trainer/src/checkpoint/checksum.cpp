#include "flashtrain/trainer/checkpoint/checksum.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace flashtrain::trainer {

void Fnv1a64::update(const void* data, std::size_t bytes) {
  constexpr std::uint64_t kPrime = 0x100000001b3ULL;
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t h = hash_;
  for (std::size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * kPrime;
  hash_ = h;
}

std::string Fnv1a64::hex() const {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash_));
  return text;
}

std::string fnv1a64_of_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  Fnv1a64 hash;
  std::vector<char> buffer(std::size_t{1} << 20);
  while (in) {
    in.read(buffer.data(), std::streamsize(buffer.size()));
    hash.update(buffer.data(), std::size_t(in.gcount()));
  }
  if (in.bad()) throw std::runtime_error("cannot read " + path);
  return hash.hex();
}

}  // namespace flashtrain::trainer

#include "flashtrain/data/shard_reader.h"

#include <cstring>
#include <limits>

#include "flashtrain/data/error.h"
#include "mapped_file.h"

// Tokens are read straight from the map as host integers.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "token shards are little-endian; a big-endian host needs byte swaps here");

namespace flashtrain::data {

ShardReader::ShardReader(const std::string& path)
    : path_(path), file_(std::make_unique<MappedFile>(path)) {
  // decode_shard_header checks the size before it reads any byte.
  header_ = decode_shard_header(file_->data(), file_->size(), path_);
  tokens_ = file_->data() + kShardHeaderBytes;
}

ShardReader::~ShardReader() = default;
ShardReader::ShardReader(ShardReader&&) noexcept = default;
ShardReader& ShardReader::operator=(ShardReader&&) noexcept = default;

void ShardReader::check_range(std::int64_t begin, std::int64_t count) const {
  if (begin < 0 || count < 0 || begin > header_.token_count - count) {
    throw DataError("token range [" + std::to_string(begin) + ", " +
                    std::to_string(begin + count) + ") is outside shard '" + path_ + "' of " +
                    std::to_string(header_.token_count) + " tokens");
  }
}

std::uint32_t ShardReader::token(std::int64_t index) const {
  check_range(index, 1);
  if (header_.format == TokenFormat::kUint16) {
    std::uint16_t t;
    std::memcpy(&t, tokens_ + 2 * index, sizeof t);
    return t;
  }
  std::uint32_t t;
  std::memcpy(&t, tokens_ + 4 * index, sizeof t);
  return t;
}

void ShardReader::read(std::int64_t begin, std::int64_t count, std::int32_t* out) const {
  check_range(begin, count);
  if (header_.format == TokenFormat::kUint16) {
    const unsigned char* p = tokens_ + 2 * begin;
    for (std::int64_t i = 0; i < count; ++i) {
      std::uint16_t t;
      std::memcpy(&t, p + 2 * i, sizeof t);
      out[i] = t;
    }
    return;
  }
  const unsigned char* p = tokens_ + 4 * begin;
  for (std::int64_t i = 0; i < count; ++i) {
    std::uint32_t t;
    std::memcpy(&t, p + 4 * i, sizeof t);
    if (t > static_cast<std::uint32_t>(std::numeric_limits<std::int32_t>::max())) {
      throw DataError("token " + std::to_string(t) + " at index " + std::to_string(begin + i) +
                      " (byte " + std::to_string(kShardHeaderBytes + 4 * (begin + i)) +
                      ") of shard '" + path_ + "' does not fit an int32");
    }
    out[i] = static_cast<std::int32_t>(t);
  }
}

}  // namespace flashtrain::data

// A memory-mapped, read-only token shard (format: shard_format.h). The
// header and the file size are validated on open.
//
//   ShardReader shard("train_000000.bin");
//   std::vector<std::int32_t> window(1025);
//   shard.read(offset, window.size(), window.data());
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "flashtrain/data/shard_format.h"

namespace flashtrain::data {

class MappedFile;

class ShardReader {
 public:
  explicit ShardReader(const std::string& path);
  ~ShardReader();
  ShardReader(ShardReader&&) noexcept;
  ShardReader& operator=(ShardReader&&) noexcept;

  const std::string& path() const { return path_; }
  TokenFormat format() const { return header_.format; }
  std::int64_t token_count() const { return header_.token_count; }

  // Token at `index`; throws DataError when out of range.
  std::uint32_t token(std::int64_t index) const;
  // Copies tokens [begin, begin + count) into `out` as int32. Throws DataError
  // when the range leaves the shard or a uint32 token does not fit an int32.
  void read(std::int64_t begin, std::int64_t count, std::int32_t* out) const;

 private:
  void check_range(std::int64_t begin, std::int64_t count) const;

  std::string path_;
  std::unique_ptr<MappedFile> file_;
  ShardHeader header_{};
  const unsigned char* tokens_ = nullptr;
};

}  // namespace flashtrain::data

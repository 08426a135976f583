// Writes a token shard (format: shard_format.h) atomically: tokens stream to
// a temporary file, commit() fills in the header's count and renames it onto
// the final path. A writer destroyed without commit() leaves no file behind.
//
//   ShardWriter out("val_000000.bin", format_for_vocab_size(vocab));
//   out.append(tokens.data(), tokens.size());
//   out.commit();
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "flashtrain/data/atomic_file.h"
#include "flashtrain/data/shard_format.h"

namespace flashtrain::data {

class ShardWriter {
 public:
  ShardWriter(std::string path, TokenFormat format);

  // Appends tokens; throws DataError (nothing written) if a token is negative
  // or too large for the format, or if the shard would exceed kMaxShardTokens.
  void append(const std::int32_t* tokens, std::size_t count);
  void append(const std::vector<std::int32_t>& tokens) { append(tokens.data(), tokens.size()); }

  void commit();

  std::int64_t token_count() const { return token_count_; }
  TokenFormat format() const { return format_; }

 private:
  AtomicFileWriter file_;
  TokenFormat format_;
  std::int64_t token_count_ = 0;
  std::vector<unsigned char> scratch_;
};

// Writes `tokens` as one shard at `path`.
void write_shard(const std::string& path, TokenFormat format,
                 const std::vector<std::int32_t>& tokens);

}  // namespace flashtrain::data

// Private: writes a stream of tokens as numbered shards <prefix>_000000.bin,
// <prefix>_000001.bin, ... of at most `shard_tokens` tokens each.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "flashtrain/data/shard_writer.h"

namespace flashtrain::data {

class ShardSequence {
 public:
  ShardSequence(std::string directory, std::string prefix, TokenFormat format,
                std::int64_t shard_tokens);

  void append(const std::vector<std::int32_t>& tokens);
  // Commits the last shard; returns the paths of all shards written.
  std::vector<std::string> finish();

  static std::string shard_name(const std::string& prefix, std::size_t index);

 private:
  std::string directory_;
  std::string prefix_;
  TokenFormat format_;
  std::int64_t shard_tokens_;
  std::unique_ptr<ShardWriter> current_;
  std::vector<std::string> written_;
};

// Removes <prefix>_NNNNNN.bin files in `directory` that are not in `keep`
// (left over from an earlier run with more shards).
void remove_stale_shards(const std::string& directory, const std::string& prefix,
                         const std::vector<std::string>& keep);

}  // namespace flashtrain::data

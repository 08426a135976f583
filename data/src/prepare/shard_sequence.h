// Private: writes a stream of tokens as numbered shards <prefix>_000000.bin,
// <prefix>_000001.bin, ... of at most `shard_tokens` tokens each.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "flashtrain/data/shard_writer.h"

namespace flashtrain::data {

class ShardSequence {
 public:
  // `before_new_shard` is called with a shard's file name before the file is
  // created (prepare records it as its own first).
  using NewShardHook = std::function<void(const std::string& name)>;

  ShardSequence(std::string directory, std::string prefix, TokenFormat format,
                std::int64_t shard_tokens, NewShardHook before_new_shard = {});

  void append(const std::vector<std::int32_t>& tokens);
  // Commits the last shard; returns the paths of all shards written.
  std::vector<std::string> finish();

  static std::string shard_name(const std::string& prefix, std::size_t index);

 private:
  std::string directory_;
  std::string prefix_;
  TokenFormat format_;
  std::int64_t shard_tokens_;
  NewShardHook before_new_shard_;
  std::unique_ptr<ShardWriter> current_;
  std::vector<std::string> written_;
};

// Whether `name` is a shard file name <prefix>_NNNNNN.bin.
bool is_shard_name(const std::string& name, const std::string& prefix);

// The file names of the <prefix>_NNNNNN.bin files in `directory`, sorted.
std::vector<std::string> shard_files_in(const std::string& directory, const std::string& prefix);

}  // namespace flashtrain::data

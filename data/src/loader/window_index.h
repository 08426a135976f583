// Private: the windows of T + 1 tokens at stride T over a list of shards,
// numbered globally in shard order, and the order an epoch visits them in.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "flashtrain/data/shard_reader.h"

namespace flashtrain::data::loader {

struct WindowLocation {
  std::size_t shard;
  std::int64_t first_token;
};

class WindowIndex {
 public:
  WindowIndex(const std::vector<ShardReader>& shards, std::int64_t sequence_length);

  std::int64_t size() const { return first_window_.back(); }
  WindowLocation locate(std::int64_t window) const;

 private:
  std::int64_t stride_;
  std::vector<std::int64_t> first_window_;  // per shard, plus the total at the end
};

// The visiting order of an epoch: a permutation of [0, windows) drawn from
// (seed, epoch) by Fisher-Yates, or the identity without shuffle.
std::vector<std::uint32_t> epoch_order(std::int64_t windows, std::uint64_t seed, std::int64_t epoch,
                                       bool shuffle);

// 64-bit FNV-1a over the shards' file names (not directories, so data may
// move) and token counts, as 16 hex digits.
std::string data_fingerprint(const std::vector<ShardReader>& shards);

}  // namespace flashtrain::data::loader

#include "window_index.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <numeric>

#include "flashtrain/data/error.h"
#include "flashtrain/data/rng.h"

namespace flashtrain::data::loader {

WindowIndex::WindowIndex(const std::vector<ShardReader>& shards, std::int64_t sequence_length)
    : stride_(sequence_length) {
  first_window_.reserve(shards.size() + 1);
  std::int64_t total = 0;
  for (const ShardReader& shard : shards) {
    first_window_.push_back(total);
    // Window w covers tokens [w * T, w * T + T]; the last must end in the shard.
    if (shard.token_count() > 0) total += (shard.token_count() - 1) / stride_;
  }
  first_window_.push_back(total);
}

WindowLocation WindowIndex::locate(std::int64_t window) const {
  // The last shard whose first window is <= window (empty shards share it
  // with their successor; upper_bound skips past them).
  const auto it = std::upper_bound(first_window_.begin(), first_window_.end() - 1, window);
  const auto shard = static_cast<std::size_t>(it - first_window_.begin() - 1);
  return {shard, (window - first_window_[shard]) * stride_};
}

std::vector<std::uint32_t> epoch_order(std::int64_t windows, std::uint64_t seed, std::int64_t epoch,
                                       bool shuffle) {
  if (windows > std::numeric_limits<std::uint32_t>::max()) {
    throw DataError("the shards hold " + std::to_string(windows) +
                    " windows, more than the loader indexes (2^32 - 1); use a longer sequence length");
  }
  std::vector<std::uint32_t> order(static_cast<std::size_t>(windows));
  std::iota(order.begin(), order.end(), 0u);
  if (!shuffle) return order;
  Rng rng(derive_seed({hash_name("ShardLoader"), seed, static_cast<std::uint64_t>(epoch)}));
  for (std::size_t i = order.size(); i > 1; --i) {
    std::swap(order[i - 1], order[rng.below(i)]);
  }
  return order;
}

std::string data_fingerprint(const std::vector<ShardReader>& shards) {
  std::string key;
  for (const ShardReader& shard : shards) {
    const std::string& path = shard.path();
    key += path.substr(path.find_last_of('/') + 1);  // npos + 1 == 0: no directory
    key += ':' + std::to_string(shard.token_count()) + ';';
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash_name(key)));
  return hex;
}

}  // namespace flashtrain::data::loader

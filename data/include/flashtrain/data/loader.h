// Batches of [B, T + 1] token windows from memory-mapped shards, for
// next-token training (inputs = window[:-1], targets = window[1:]).
//
// Every shard is cut into windows of T + 1 tokens at stride T (so each token
// is a target once; windows do not cross shards). Each epoch visits the
// windows in an order fixed by (seed, epoch) - or in file order without
// shuffle. Global batch k takes the next world_size * B windows of that order
// and rank r takes its own B of them, so ranks read disjoint windows and the
// stream is a function of (seed, epoch, rank, world size). A final partial
// global batch of an epoch is skipped, so every rank has the same steps.
//
//   LoaderOptions options;
//   options.shard_paths = find_shards(".data/corpus/train_*.bin");
//   options.batch_size = 8;
//   options.sequence_length = 1024;
//   ShardLoader loader(options);
//   TokenBatch batch = loader.next();   // batch.tokens: [8, 1025] int32
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "flashtrain/data/loader_cursor.h"

namespace flashtrain::data {

struct LoaderOptions {
  std::vector<std::string> shard_paths;  // read in this order
  std::int64_t batch_size = 1;           // B, per rank
  std::int64_t sequence_length = 1;      // T; windows hold T + 1 tokens
  std::uint64_t seed = 0;
  int rank = 0;
  int world_size = 1;
  bool shuffle = true;                   // false: file order (validation)
  std::int64_t vocab_size = 0;           // > 0: tokens >= vocab_size are an error
};

struct TokenBatch {
  std::int64_t batch_size = 0;
  std::int64_t window = 0;          // T + 1
  std::vector<std::int32_t> tokens;  // [batch_size, window], row-major
};

// Shard files matching a glob pattern such as "data/train_*.bin", sorted by
// name; throws DataError when none matches.
std::vector<std::string> find_shards(const std::string& pattern);

class ShardLoader {
 public:
  // Opens and validates every shard; throws DataError for bad shards, bad
  // options, or data too small for one global batch.
  explicit ShardLoader(LoaderOptions options);
  ~ShardLoader();
  ShardLoader(ShardLoader&&) noexcept;
  ShardLoader& operator=(ShardLoader&&) noexcept;

  TokenBatch next();
  // Fills `out` ([B, T + 1]) with the next batch.
  void next(std::int32_t* out);

  LoaderCursor cursor() const;
  // Continues from `cursor`; throws DataError if it was saved for other data,
  // another seed, T or shuffle, or at a position this world_size * B cannot
  // continue from.
  void restore(const LoaderCursor& cursor);

  std::int64_t total_windows() const;
  std::int64_t steps_per_epoch() const;  // global batches per epoch
  std::int64_t epoch() const;
  const LoaderOptions& options() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace flashtrain::data

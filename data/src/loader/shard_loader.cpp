#include <string>
#include <utility>

#include "flashtrain/data/error.h"
#include "flashtrain/data/loader.h"
#include "window_index.h"

namespace flashtrain::data {

struct ShardLoader::State {
  LoaderOptions options;
  std::vector<ShardReader> shards;
  std::int64_t total_tokens = 0;
  std::string fingerprint;
  loader::WindowIndex index;
  std::int64_t epoch = 0;
  std::int64_t consumed = 0;  // windows of this epoch taken by all ranks
  std::vector<std::uint32_t> order;

  State(LoaderOptions opts, std::vector<ShardReader> readers)
      : options(std::move(opts)),
        shards(std::move(readers)),
        fingerprint(loader::data_fingerprint(shards)),
        index(shards, options.sequence_length) {
    for (const ShardReader& s : shards) total_tokens += s.token_count();
  }

  std::int64_t global_batch() const { return options.world_size * options.batch_size; }
  void enter_epoch(std::int64_t e) {
    epoch = e;
    consumed = 0;
    order = loader::epoch_order(index.size(), options.seed, epoch, options.shuffle);
  }
};

namespace {

void check_options(const LoaderOptions& o) {
  auto fail = [](const std::string& message) { throw DataError("ShardLoader: " + message); };
  if (o.shard_paths.empty()) fail("no shard paths given");
  if (o.batch_size < 1) fail("batch_size must be >= 1, got " + std::to_string(o.batch_size));
  if (o.sequence_length < 1) fail("sequence_length must be >= 1, got " + std::to_string(o.sequence_length));
  if (o.world_size < 1) fail("world_size must be >= 1, got " + std::to_string(o.world_size));
  if (o.rank < 0 || o.rank >= o.world_size) {
    fail("rank " + std::to_string(o.rank) + " is outside [0, world_size " +
         std::to_string(o.world_size) + ")");
  }
  if (o.vocab_size < 0) fail("vocab_size must be >= 0, got " + std::to_string(o.vocab_size));
}

std::vector<ShardReader> open_shards(const std::vector<std::string>& paths) {
  std::vector<ShardReader> shards;
  shards.reserve(paths.size());
  for (const std::string& path : paths) shards.emplace_back(path);
  return shards;
}

}  // namespace

ShardLoader::ShardLoader(LoaderOptions options) {
  check_options(options);
  std::vector<ShardReader> shards = open_shards(options.shard_paths);
  state_ = std::make_unique<State>(std::move(options), std::move(shards));
  const LoaderOptions& o = state_->options;
  if (state_->index.size() < state_->global_batch()) {
    throw TooFewWindows("ShardLoader: " + std::to_string(o.shard_paths.size()) + " shard(s) with " +
                            std::to_string(state_->total_tokens) + " tokens hold " +
                            std::to_string(state_->index.size()) + " windows of " +
                            std::to_string(o.sequence_length + 1) +
                            " tokens, fewer than one global batch (world_size " +
                            std::to_string(o.world_size) + " x batch_size " + std::to_string(o.batch_size) +
                            ")",
                        static_cast<std::int64_t>(state_->index.size()),
                        static_cast<std::int64_t>(state_->global_batch()));
  }
  state_->enter_epoch(0);
}

ShardLoader::~ShardLoader() = default;
ShardLoader::ShardLoader(ShardLoader&&) noexcept = default;
ShardLoader& ShardLoader::operator=(ShardLoader&&) noexcept = default;

TokenBatch ShardLoader::next() {
  TokenBatch batch;
  batch.batch_size = state_->options.batch_size;
  batch.window = state_->options.sequence_length + 1;
  batch.tokens.resize(static_cast<std::size_t>(batch.batch_size * batch.window));
  next(batch.tokens.data());
  return batch;
}

void ShardLoader::next(std::int32_t* out) {
  State& s = *state_;
  const LoaderOptions& o = s.options;
  if (s.consumed + s.global_batch() > s.index.size()) s.enter_epoch(s.epoch + 1);
  const std::int64_t window = o.sequence_length + 1;
  const std::int64_t first = s.consumed + o.rank * o.batch_size;
  for (std::int64_t b = 0; b < o.batch_size; ++b) {
    const auto location = s.index.locate(s.order[static_cast<std::size_t>(first + b)]);
    const ShardReader& shard = s.shards[location.shard];
    std::int32_t* row = out + b * window;
    shard.read(location.first_token, window, row);
    if (o.vocab_size > 0) {
      for (std::int64_t t = 0; t < window; ++t) {
        if (row[t] >= o.vocab_size) {
          throw DataError("token " + std::to_string(row[t]) + " at index " +
                          std::to_string(location.first_token + t) + " of shard '" + shard.path() +
                          "' is outside the vocabulary (size " + std::to_string(o.vocab_size) + ")");
        }
      }
    }
  }
  s.consumed += s.global_batch();
}

LoaderCursor ShardLoader::cursor() const {
  const State& s = *state_;
  LoaderCursor c;
  c.seed = s.options.seed;
  c.shuffle = s.options.shuffle;
  c.sequence_length = s.options.sequence_length;
  c.shard_count = static_cast<std::int64_t>(s.shards.size());
  c.total_tokens = s.total_tokens;
  c.data_fingerprint = s.fingerprint;
  c.epoch = s.epoch;
  c.windows_consumed = s.consumed;
  return c;
}

void ShardLoader::restore(const LoaderCursor& c) {
  State& s = *state_;
  const LoaderCursor mine = cursor();
  auto mismatch = [](const std::string& what, const std::string& saved, const std::string& now) {
    throw CursorMismatch("loader cursor does not fit this loader: it was saved with " + what + " " + saved +
                             ", the loader has " + now,
                         what, saved, now);
  };
  if (c.seed != mine.seed) mismatch("seed", std::to_string(c.seed), std::to_string(mine.seed));
  if (c.shuffle != mine.shuffle) mismatch("shuffle", c.shuffle ? "true" : "false", mine.shuffle ? "true" : "false");
  if (c.sequence_length != mine.sequence_length) {
    mismatch("sequence_length", std::to_string(c.sequence_length), std::to_string(mine.sequence_length));
  }
  if (c.shard_count != mine.shard_count || c.total_tokens != mine.total_tokens ||
      c.data_fingerprint != mine.data_fingerprint) {
    mismatch("data", std::to_string(c.shard_count) + " shards / " + std::to_string(c.total_tokens) +
                         " tokens / fingerprint " + c.data_fingerprint,
             std::to_string(mine.shard_count) + " shards / " + std::to_string(mine.total_tokens) +
                 " tokens / fingerprint " + mine.data_fingerprint);
  }
  if (c.epoch < 0 || c.windows_consumed < 0 || c.windows_consumed > s.index.size()) {
    throw DataError("loader cursor position (epoch " + std::to_string(c.epoch) + ", windows " +
                    std::to_string(c.windows_consumed) + ") is outside the data's " +
                    std::to_string(s.index.size()) + " windows");
  }
  // Ranks may change between runs as long as the position is a whole
  // number of the new global batches.
  if (c.windows_consumed % s.global_batch() != 0) {
    throw DataError("loader cursor position " + std::to_string(c.windows_consumed) +
                    " windows is not a multiple of world_size x batch_size = " +
                    std::to_string(s.global_batch()));
  }
  if (c.epoch != s.epoch) s.enter_epoch(c.epoch);
  s.consumed = c.windows_consumed;
}

std::int64_t ShardLoader::total_windows() const { return state_->index.size(); }
std::int64_t ShardLoader::steps_per_epoch() const {
  return state_->index.size() / state_->global_batch();
}
std::int64_t ShardLoader::epoch() const { return state_->epoch; }
const LoaderOptions& ShardLoader::options() const { return state_->options; }

}  // namespace flashtrain::data

// The shard loader: window layout, epochs, disjoint ranks, determinism, and
// exact resume from a JSON cursor.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "flashtrain/data/error.h"
#include "flashtrain/data/loader.h"
#include "flashtrain/data/shard_writer.h"
#include "test_util.h"

namespace flashtrain::data {
namespace {

using testing::expect_error;
using testing::ScratchDir;

// Token i of shard s is s * 10000 + i, so every window tells where it came from.
constexpr std::int32_t kShardStride = 10000;
constexpr std::int64_t kT = 16;

struct Window {
  std::int32_t shard;
  std::int32_t offset;
  bool operator<(const Window& o) const { return std::tie(shard, offset) < std::tie(o.shard, o.offset); }
  bool operator==(const Window& o) const { return shard == o.shard && offset == o.offset; }
};

void PrintTo(const Window& w, std::ostream* os) { *os << "{shard " << w.shard << ", offset " << w.offset << "}"; }

class LoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Shard 1 is too short for a window and must simply be skipped.
    sizes_ = {1000, 10, 2501, 577};
    for (std::size_t s = 0; s < sizes_.size(); ++s) {
      std::vector<std::int32_t> tokens(static_cast<std::size_t>(sizes_[s]));
      for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<std::int32_t>(s) * kShardStride + static_cast<std::int32_t>(i);
      paths_.push_back(dir_.file("train_00000" + std::to_string(s) + ".bin"));
      write_shard(paths_.back(), TokenFormat::kUint16, tokens);
    }
    // Windows per shard: (n - 1) / T.
    for (const auto n : sizes_) expected_windows_ += (n - 1) / kT;
  }

  LoaderOptions options(std::int64_t batch, int rank = 0, int world = 1, std::uint64_t seed = 1) const {
    LoaderOptions o;
    o.shard_paths = paths_;
    o.batch_size = batch;
    o.sequence_length = kT;
    o.seed = seed;
    o.rank = rank;
    o.world_size = world;
    return o;
  }

  // Checks that every row is a real window and returns where each came from.
  std::vector<Window> windows_of(const TokenBatch& batch) const {
    std::vector<Window> out;
    for (std::int64_t b = 0; b < batch.batch_size; ++b) {
      const std::int32_t* row = batch.tokens.data() + b * batch.window;
      const Window w{row[0] / kShardStride, row[0] % kShardStride};
      EXPECT_EQ(w.offset % kT, 0) << "windows start at multiples of T";
      EXPECT_LE(w.offset + kT, sizes_[static_cast<std::size_t>(w.shard)] - 1) << "window leaves its shard";
      for (std::int64_t t = 0; t < batch.window; ++t) EXPECT_EQ(row[t], row[0] + t);
      out.push_back(w);
    }
    return out;
  }

  ScratchDir dir_;
  std::vector<std::int64_t> sizes_;
  std::vector<std::string> paths_;
  std::int64_t expected_windows_ = 0;
};

TEST_F(LoaderTest, BatchesAreWindowsOfTPlusOneTokens) {
  ShardLoader loader(options(5));
  EXPECT_EQ(loader.total_windows(), expected_windows_);
  EXPECT_EQ(loader.steps_per_epoch(), expected_windows_ / 5);
  const TokenBatch batch = loader.next();
  EXPECT_EQ(batch.batch_size, 5);
  EXPECT_EQ(batch.window, kT + 1);
  EXPECT_EQ(batch.tokens.size(), 5u * (kT + 1));
  windows_of(batch);
}

TEST_F(LoaderTest, AnEpochVisitsEveryWindowOnce) {
  // 254 windows; batch 2 divides it, so one epoch is every window exactly once.
  ASSERT_EQ(expected_windows_ % 2, 0);
  ShardLoader loader(options(2));
  std::set<Window> seen;
  for (std::int64_t step = 0; step < loader.steps_per_epoch(); ++step) {
    for (const Window& w : windows_of(loader.next())) EXPECT_TRUE(seen.insert(w).second) << "repeat";
  }
  EXPECT_EQ(static_cast<std::int64_t>(seen.size()), expected_windows_);
  EXPECT_EQ(loader.epoch(), 0);
  // Every token that can be a target (all but each shard's first and its
  // tail after the last whole window) is a target exactly once: windows tile.
  std::map<std::int32_t, std::vector<std::int32_t>> starts;
  for (const Window& w : seen) starts[w.shard].push_back(w.offset);
  for (const auto& [shard, offsets] : starts) {
    for (std::size_t i = 0; i < offsets.size(); ++i) EXPECT_EQ(offsets[i], static_cast<std::int32_t>(i * kT));
  }
  // The next batch starts epoch 1, in a different order over the same windows.
  loader.next();
  EXPECT_EQ(loader.epoch(), 1);
}

TEST_F(LoaderTest, EpochsHaveDifferentOrdersAndSeedsDifferentStreams) {
  auto first_windows = [&](std::uint64_t seed, int skip_epochs) {
    ShardLoader loader(options(2, 0, 1, seed));
    for (std::int64_t i = 0; i < skip_epochs * loader.steps_per_epoch(); ++i) loader.next();
    std::vector<Window> out;
    for (int i = 0; i < 10; ++i) for (const Window& w : windows_of(loader.next())) out.push_back(w);
    return out;
  };
  EXPECT_EQ(first_windows(1, 0), first_windows(1, 0));  // deterministic
  EXPECT_NE(first_windows(1, 0), first_windows(1, 1));  // epoch 1 reshuffles
  EXPECT_NE(first_windows(1, 0), first_windows(2, 0));  // seed matters
}

TEST_F(LoaderTest, WithoutShuffleWindowsComeInFileOrder) {
  LoaderOptions o = options(3);
  o.shuffle = false;
  ShardLoader loader(o);
  std::vector<Window> seen;
  for (int i = 0; i < 30; ++i) for (const Window& w : windows_of(loader.next())) seen.push_back(w);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(seen.front(), (Window{0, 0}));
  EXPECT_EQ(seen[61], (Window{0, 61 * 16}));  // shard 0 has (1000 - 1) / 16 = 62 windows,
  EXPECT_EQ(seen[62], (Window{2, 0}));         // shard 1 none
}

TEST_F(LoaderTest, RanksReadDisjointSlicesOfTheGlobalBatch) {
  constexpr int kWorld = 4;
  constexpr std::int64_t kB = 3;
  ShardLoader single(options(kWorld * kB));
  std::vector<ShardLoader> ranks;
  for (int r = 0; r < kWorld; ++r) ranks.emplace_back(options(kB, r, kWorld));
  ASSERT_EQ(ranks[0].steps_per_epoch(), single.steps_per_epoch());
  std::set<Window> all;
  // Two epochs: the split holds across the reshuffle too.
  for (std::int64_t step = 0; step < 2 * single.steps_per_epoch(); ++step) {
    const std::vector<Window> global = windows_of(single.next());
    std::vector<Window> joined;
    for (auto& rank : ranks) for (const Window& w : windows_of(rank.next())) joined.push_back(w);
    ASSERT_EQ(joined, global) << "step " << step;
    if (step < single.steps_per_epoch()) {
      for (const Window& w : joined) EXPECT_TRUE(all.insert(w).second) << "two ranks read one window";
    }
  }
  EXPECT_EQ(static_cast<std::int64_t>(all.size()), single.steps_per_epoch() * kWorld * kB);
}

TEST_F(LoaderTest, ResumeFromASerialisedCursorReproducesTheBatches) {
  ShardLoader original(options(4, 1, 2, 7));
  const std::int64_t steps = original.steps_per_epoch();
  // Save at several points, including an epoch's last step and mid-epoch 1.
  for (const std::int64_t save_at : {std::int64_t{0}, std::int64_t{5}, steps, steps + 3}) {
    ShardLoader a(options(4, 1, 2, 7));
    for (std::int64_t i = 0; i < save_at; ++i) a.next();
    const std::string saved = nlohmann::json(a.cursor()).dump();

    ShardLoader b(options(4, 1, 2, 7));
    b.restore(nlohmann::json::parse(saved).get<LoaderCursor>());
    EXPECT_EQ(b.cursor(), a.cursor());
    for (std::int64_t i = 0; i < steps + 2; ++i) {
      ASSERT_EQ(b.next().tokens, a.next().tokens) << "save_at " << save_at << ", step " << i;
    }
  }
}

TEST_F(LoaderTest, ResumeOnAnotherWorldSizeContinuesTheGlobalStream) {
  ShardLoader two_ranks_0(options(4, 0, 2)), two_ranks_1(options(4, 1, 2));
  for (int i = 0; i < 6; ++i) { two_ranks_0.next(); two_ranks_1.next(); }
  const LoaderCursor cursor = two_ranks_0.cursor();
  EXPECT_EQ(cursor, two_ranks_1.cursor()) << "one cursor serves all ranks";
  ShardLoader one_rank(options(8));
  one_rank.restore(cursor);
  const std::vector<Window> global = windows_of(one_rank.next());
  std::vector<Window> joined = windows_of(two_ranks_0.next());
  for (const Window& w : windows_of(two_ranks_1.next())) joined.push_back(w);
  EXPECT_EQ(joined, global);
}

TEST_F(LoaderTest, CursorsForOtherRunsAreRefused) {
  ShardLoader loader(options(4));
  loader.next();
  const LoaderCursor cursor = loader.cursor();

  ShardLoader other_seed(options(4, 0, 1, 99));
  expect_error<DataError>([&] { other_seed.restore(cursor); }, {"seed 1", "has 99"});

  LoaderOptions shorter = options(4);
  shorter.sequence_length = 8;
  ShardLoader other_t(shorter);
  expect_error<DataError>([&] { other_t.restore(cursor); }, {"sequence_length 16", "has 8"});

  LoaderOptions fewer = options(4);
  fewer.shard_paths.pop_back();
  ShardLoader other_data(fewer);
  expect_error<DataError>([&] { other_data.restore(cursor); }, {"data 4 shards", "3 shards"});

  ShardLoader bigger_batch(options(8));
  expect_error<DataError>([&] { bigger_batch.restore(cursor); },
                          {"position 4 windows", "multiple of world_size x batch_size = 8"});
}

TEST(LoaderCursorJson, MissingOrMistypedKeysAreNamed) {
  nlohmann::json j = LoaderCursor{};
  EXPECT_EQ(j.get<LoaderCursor>(), LoaderCursor{});
  j.erase("epoch");
  expect_error<DataError>([&] { (void)j.get<LoaderCursor>(); }, {"missing key 'epoch'"});
  j = LoaderCursor{};
  j["shuffle"] = "yes";
  expect_error<DataError>([&] { (void)j.get<LoaderCursor>(); }, {"key 'shuffle'", "wrong type", "string"});
  j = LoaderCursor{};
  j["version"] = 2;
  expect_error<DataError>([&] { (void)j.get<LoaderCursor>(); }, {"version 2, expected 1"});
}

TEST_F(LoaderTest, BadOptionsAndDataAreClearErrors) {
  LoaderOptions o = options(4);
  o.rank = 2;
  o.world_size = 2;
  expect_error<DataError>([&] { ShardLoader{o}; }, {"rank 2", "world_size 2"});
  expect_error<DataError>([&] { ShardLoader{options(0)}; }, {"batch_size must be >= 1"});
  expect_error<DataError>([&] { ShardLoader{options(200, 0, 2)}; },
                          {"254 windows of 17 tokens", "fewer than one global batch", "world_size 2 x batch_size 200"});
  o = options(4);
  o.vocab_size = 2 * kShardStride;  // shard 2 and 3 hold larger tokens
  o.shuffle = false;
  ShardLoader checked(o);
  for (int i = 0; i < 15; ++i) checked.next();  // 60 of shard 0's 62 windows
  // The 16th batch ends in shard 2, whose tokens start at 20000.
  expect_error<DataError>([&] { checked.next(); },
                          {"token 20000", "train_000002.bin", "outside the vocabulary (size 20000)"});
  o.shard_paths.push_back(dir_.file("missing.bin"));
  expect_error<DataError>([&] { ShardLoader{o}; }, {"cannot open", "missing.bin"});
}

TEST_F(LoaderTest, FindShardsSortsMatchesAndNamesAMiss) {
  EXPECT_EQ(find_shards(dir_.file("train_*.bin")), paths_);
  expect_error<DataError>([&] { find_shards(dir_.file("val_*.bin")); }, {"no shard file matches", "val_*.bin"});
}

}  // namespace
}  // namespace flashtrain::data

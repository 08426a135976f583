// The JSON cache of timed choices: round trip, corrupt files, atomic
// replacement and concurrent writers.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "flashrnn/tune/tuning_cache.h"

namespace flashrnn::tune {
namespace {

namespace fs = std::filesystem;

// A fresh directory per test, removed afterwards.
class TuningCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("flashtune_cache_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    path_ = (dir_ / "nested" / "tune.json").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const std::string& text) {
    fs::create_directories(fs::path(path_).parent_path());
    std::ofstream(path_) << text;
  }

  fs::path dir_;
  std::string path_;
};

CacheKey key(int heads, int head_dim = 64, const std::string& device = "NVIDIA H100 80GB HBM3") {
  return CacheKey{device, Cell::kSlstm, DType::kFp16, heads, head_dim, 32};
}

CachedChoice choice(int k_reg, double ms) {
  return CachedChoice{FusedDecisions{4, HeadExchange::kCluster, 1, 32, 2, 8, k_reg}, ms, 3};
}

TEST(TuningCacheKeys, BatchClassesArePowersOfTwoFrom16) {
  EXPECT_EQ(batch_class(1), 16);
  EXPECT_EQ(batch_class(16), 16);
  EXPECT_EQ(batch_class(17), 32);
  EXPECT_EQ(batch_class(100), 128);
  const FusedShape shape{Cell::kGru, 3, 128, 40, DType::kFp32};
  const CacheKey k = CacheKey::of(device_fixture("l4"), shape);
  EXPECT_EQ(k.to_string(), "NVIDIA L4 | gru fp32 3x128 batch<=64");
}

TEST_F(TuningCacheTest, SaveThenLoadGivesTheSameEntries) {
  TuningCache cache(path_);
  cache.put(key(12), choice(64, 0.61));
  cache.put(key(3, 256), choice(128, 1.25));
  cache.save();  // creates the missing directories
  std::string warning;
  const TuningCache loaded = TuningCache::load(path_, &warning);
  EXPECT_EQ(warning, "");
  ASSERT_EQ(loaded.size(), 2u);
  const CachedChoice* c = loaded.find(key(3, 256));
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->decisions, choice(128, 1.25).decisions);
  EXPECT_DOUBLE_EQ(c->time_ms, 1.25);
  EXPECT_EQ(c->candidates_timed, 3);
  EXPECT_EQ(loaded.find(key(12, 64, "NVIDIA H200")), nullptr);  // another device
  // No temporary file is left behind.
  for (const auto& entry : fs::directory_iterator(fs::path(path_).parent_path()))
    EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos)
        << entry.path();
}

TEST_F(TuningCacheTest, MissingFileIsAnEmptyCacheWithoutWarning) {
  std::string warning;
  EXPECT_EQ(TuningCache::load(path_, &warning).size(), 0u);
  EXPECT_EQ(warning, "");
}

TEST_F(TuningCacheTest, CorruptFilesReadAsEmptyWithAWarningAndAreReplacedOnSave) {
  const std::pair<const char*, const char*> cases[] = {
      {"{\"format\": \"flashtune-cache\", \"vers", "not valid JSON"},
      {"[1, 2, 3]", "not a flashtune-cache file"},
      {"{\"format\": \"flashtune-cache\", \"version\": 7, \"entries\": []}", "version 7"},
  };
  for (const auto& [text, expected] : cases) {
    write(text);
    std::string warning;
    TuningCache cache = TuningCache::load(path_, &warning);
    EXPECT_EQ(cache.size(), 0u);
    EXPECT_NE(warning.find(expected), std::string::npos) << warning;
    EXPECT_NE(warning.find(path_), std::string::npos) << warning;
    cache.put(key(1), choice(16, 0.5));
    cache.save();
    std::string after;
    EXPECT_EQ(TuningCache::load(path_, &after).size(), 1u);
    EXPECT_EQ(after, "");
  }
}

TEST_F(TuningCacheTest, MalformedEntriesAreSkippedOthersKept) {
  TuningCache cache(path_);
  cache.put(key(12), choice(64, 0.61));
  cache.save();
  std::ifstream in(path_);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Append a second entry with a cell the tuner does not know.
  const size_t end = text.rfind(']');
  text.insert(end, ", {\"device\": \"x\", \"cell\": \"transformer\"}");
  write(text);
  std::string warning;
  const TuningCache loaded = TuningCache::load(path_, &warning);
  EXPECT_EQ(loaded.size(), 1u);
  EXPECT_NE(warning.find("skipped 1 malformed entry"), std::string::npos) << warning;
}

TEST_F(TuningCacheTest, ConcurrentWritersLoseNoEntries) {
  constexpr int kWriters = 6, kRounds = 5;
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w)
    writers.emplace_back([&, w] {
      for (int round = 0; round < kRounds; ++round) {
        TuningCache cache(path_);  // each writer starts from its own view
        cache.put(key(1 + w * kRounds + round), choice(16 * round, w + 0.5));
        cache.save();
      }
    });
  for (std::thread& t : writers) t.join();
  std::string warning;
  const TuningCache merged = TuningCache::load(path_, &warning);
  EXPECT_EQ(warning, "");
  EXPECT_EQ(merged.size(), size_t(kWriters * kRounds));
  for (int i = 1; i <= kWriters * kRounds; ++i) EXPECT_NE(merged.find(key(i)), nullptr) << i;
}

TEST_F(TuningCacheTest, SaveFailureNamesThePath) {
  // The cache's directory cannot be created where a file is in the way.
  fs::create_directories(dir_);
  std::ofstream(dir_ / "blocker") << "a file, not a directory";
  const std::string blocked = (dir_ / "blocker" / "tune.json").string();
  TuningCache cache(blocked);
  cache.put(key(1), choice(16, 0.5));
  try {
    cache.save();
    FAIL() << "saved below a regular file";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find((dir_ / "blocker").string()), std::string::npos)
        << e.what();
  }
}

TEST(TuningCacheDefaultPath, FollowsTheEnvironment) {
  const char* saved = std::getenv("FLASHTUNE_CACHE");
  const std::string restore = saved ? saved : "";
  ::setenv("FLASHTUNE_CACHE", "/tmp/explicit.json", 1);
  EXPECT_EQ(TuningCache::default_path(), "/tmp/explicit.json");
  ::unsetenv("FLASHTUNE_CACHE");
  ::setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
  EXPECT_EQ(TuningCache::default_path(), "/tmp/xdg/flashtrain/tune.json");
  ::unsetenv("XDG_CACHE_HOME");
  ::setenv("HOME", "/home/someone", 1);
  EXPECT_EQ(TuningCache::default_path(), "/home/someone/.cache/flashtrain/tune.json");
  if (!restore.empty()) ::setenv("FLASHTUNE_CACHE", restore.c_str(), 1);
}

}  // namespace
}  // namespace flashrnn::tune

// The model files shipped in flashrnn_ops/tune/models/ parse, solve, and give
// the answers worked out by hand in their comments.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "flashrnn/tune/problem_parser.h"
#include "flashrnn/tune/solver.h"
#include "flashrnn/tune/tc_model.h"

namespace flashrnn::tune {
namespace {

const std::string kModels = FLASHTUNE_MODELS_DIR;

int64_t value(const Problem& p, const Assignment& a, const char* name) {
  return a.at(p.index_of(name));
}

TEST(Models, EveryModelFileParses) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kModels)) {
    if (entry.path().extension() != ".txt") continue;
    SCOPED_TRACE(entry.path().string());
    EXPECT_NO_THROW(load_problem(entry.path().string()));
    ++files;
  }
  EXPECT_GE(files, 3);
}

TEST(Models, TheBuiltInTcModelIsTheFileOnDisk) {
  std::ifstream in(kModels + "/tc_tiling.txt", std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), std::string(tc_tiling_model_text()))
      << "rebuild: the library embeds models/tc_tiling.txt at configure time";
}

TEST(Models, MmaTileBestIsTheHandDerivedOne) {
  const Problem p = load_problem(kModels + "/mma_tile.txt");
  const SolveResult best = solve_best(p);
  ASSERT_TRUE(best.satisfiable());
  const Assignment& a = best.solutions[0];
  EXPECT_EQ(value(p, a, "tile_m"), 128);
  EXPECT_EQ(value(p, a, "tile_n"), 256);
  EXPECT_EQ(value(p, a, "tile_k"), 32);
  EXPECT_EQ(value(p, a, "warps"), 8);
  EXPECT_EQ(value(p, a, "warps_m"), 2);
  EXPECT_EQ(value(p, a, "warps_n"), 4);
  EXPECT_EQ(best.objective, 128 * 256);
  // Every solution respects the limits the file states.
  for (const Assignment& s : solve_all(p).solutions) {
    ASSERT_LE(3 * (value(p, s, "tile_m") + value(p, s, "tile_n")) * value(p, s, "tile_k") * 2,
              232448);
    ASSERT_LE(value(p, s, "tile_m") * value(p, s, "tile_n") / (32 * value(p, s, "warps")), 128);
  }
}

TEST(Models, ScanChunksBestIsTheHandDerivedOne) {
  Problem p = load_problem(kModels + "/scan_chunks.txt");
  SolveResult best = solve_best(p);
  ASSERT_TRUE(best.satisfiable());
  EXPECT_EQ(value(p, best.solutions[0], "threads"), 1024);
  EXPECT_EQ(value(p, best.solutions[0], "items"), 16);
  EXPECT_EQ(value(p, best.solutions[0], "chunks"), 4);
  EXPECT_EQ(value(p, best.solutions[0], "padding"), 0);
  // A length that is no multiple of 128 must pad: 1000 = 1 chunk of 1024 (24 padding).
  p.set_parameter("seq_len", 1000);
  best = solve_best(p);
  ASSERT_TRUE(best.satisfiable());
  EXPECT_EQ(value(p, best.solutions[0], "padding"), 24);
  EXPECT_EQ(value(p, best.solutions[0], "chunks"), 1);
}

}  // namespace
}  // namespace flashrnn::tune

// training.local_batch_size = auto: the candidates, the CPU fallback and the
// probe's choice, with a fake memory measurement in place of the GPU's.
#include "flashtrain/trainer/batch/batch_probe.h"

#include <gtest/gtest.h>

#include <optional>
#include <stdexcept>
#include <vector>

namespace flashtrain::trainer {
namespace {

constexpr std::int64_t GiB = std::int64_t{1} << 30;

// A model whose pass needs `fixed` bytes plus `per_sequence` per sequence, and
// runs out of memory above `oom_above` sequences. Records the batches tried.
struct FakeGpu {
  FakeGpu(std::int64_t fixed_bytes, std::int64_t bytes_per_sequence, std::int64_t oom_above_batch = 1 << 30)
      : fixed(fixed_bytes), per_sequence(bytes_per_sequence), oom_above(oom_above_batch) {}

  std::int64_t fixed;
  std::int64_t per_sequence;
  std::int64_t oom_above;
  std::vector<std::int64_t> tried;

  MeasurePeak measure() {
    return [this](std::int64_t batch) -> std::optional<std::int64_t> {
      tried.push_back(batch);
      if (batch > oom_above) return std::nullopt;
      return fixed + per_sequence * batch;
    };
  }
};

config::Config with_global(std::int64_t global) {
  config::Config c;
  c.training.local_batch_size = config::TrainingConfig::kAutoLocalBatch;
  c.training.global_batch_size = global;
  return c;
}

TEST(BatchProbe, GlobalBatchPerRank) {
  EXPECT_EQ(global_batch_per_rank(with_global(64), 1), 64);
  EXPECT_EQ(global_batch_per_rank(with_global(64), 4), 16);
  EXPECT_EQ(global_batch_per_rank(with_global(0), 8), 0);  // 0: local x world, no bound
}

TEST(BatchProbe, CandidatesArePowersOfTwoDividingTheBatchPerRank) {
  EXPECT_EQ(largest_batch_candidate(64, 256), 64);
  EXPECT_EQ(largest_batch_candidate(512, 256), 256);  // capped
  EXPECT_EQ(largest_batch_candidate(48, 256), 16);    // 32 does not divide 48
  EXPECT_EQ(largest_batch_candidate(100, 256), 4);
  EXPECT_EQ(largest_batch_candidate(7, 256), 1);
  EXPECT_EQ(largest_batch_candidate(0, 256), 256);  // no bound: the cap
  EXPECT_EQ(largest_batch_candidate(1, 256), 1);
}

TEST(BatchProbe, CpuFallbackForGlobalAndWorld) {
  // {global_batch_size, world size} -> the largest power of two <= min(16, per rank) dividing it.
  struct Case {
    std::int64_t global, world, expected;
  };
  for (const Case& c : {Case{64, 1, 16}, Case{64, 4, 16}, Case{64, 8, 8}, Case{48, 1, 16}, Case{24, 1, 8},
                        Case{12, 2, 2}, Case{30, 2, 1}, Case{0, 1, 16}, Case{0, 4, 16}, Case{8, 8, 1}}) {
    EXPECT_EQ(cpu_auto_local_batch(global_batch_per_rank(with_global(c.global), c.world)), c.expected)
        << "global " << c.global << ", world " << c.world;
  }
}

TEST(BatchProbe, TakesTheLargestPowerOfTwoThatFits) {
  FakeGpu gpu{/*fixed=*/2 * GiB, /*per_sequence=*/GiB / 2};
  const ProbeBudget budget{/*available_bytes=*/40 * GiB, /*optimizer_state_bytes=*/0};
  // 64: 34 GiB x 1.1 = 37.4 fits.
  const ProbeResult result = probe_local_batch(/*per_rank=*/0, kMaxProbedBatch, budget, gpu.measure());
  EXPECT_EQ(result.batch, 64);
  EXPECT_EQ(gpu.tried, (std::vector<std::int64_t>{256, 128, 64}));
  ASSERT_EQ(result.attempts.size(), 3u);
  EXPECT_FALSE(result.attempts[0].fits);
  EXPECT_TRUE(result.attempts[2].fits);
  EXPECT_EQ(*result.attempts[2].peak_bytes, 34 * GiB);
}

TEST(BatchProbe, AppliesTheMarginAndTheOptimizerState) {
  // 32 sequences peak at 36 GiB: alone it fits 39 GiB, with the margin (39.6) not.
  FakeGpu gpu{/*fixed=*/4 * GiB, /*per_sequence=*/GiB};
  EXPECT_EQ(probe_local_batch(32, kMaxProbedBatch, ProbeBudget{39 * GiB, 0, 1.0}, gpu.measure()).batch, 32);
  EXPECT_EQ(probe_local_batch(32, kMaxProbedBatch, ProbeBudget{39 * GiB, 0}, gpu.measure()).batch, 16);
  // 16 sequences: 20 GiB x 1.1 = 22 GiB, plus 10 GiB of optimizer state is too much for 30 GiB.
  const ProbeResult result = probe_local_batch(32, kMaxProbedBatch, ProbeBudget{30 * GiB, 10 * GiB}, gpu.measure());
  EXPECT_EQ(result.batch, 8);
  EXPECT_EQ(result.attempts[1].needed_bytes, 32 * GiB);
}

TEST(BatchProbe, StartsBelowTheGlobalBatchPerRank) {
  FakeGpu gpu{0, 1};
  const ProbeResult result = probe_local_batch(/*per_rank=*/48, kMaxProbedBatch, ProbeBudget{GiB, 0}, gpu.measure());
  EXPECT_EQ(result.batch, 16);  // 16 divides 48; nothing larger is tried
  EXPECT_EQ(gpu.tried, (std::vector<std::int64_t>{16}));
}

TEST(BatchProbe, OutOfMemoryHalves) {
  FakeGpu gpu{GiB, GiB / 64, /*oom_above=*/100};
  const ProbeBudget budget{80 * GiB, GiB};
  const ProbeResult result = probe_local_batch(0, kMaxProbedBatch, budget, gpu.measure());
  EXPECT_EQ(result.batch, 64);
  EXPECT_FALSE(result.attempts[0].peak_bytes);  // 256 and 128 ran out of memory
  EXPECT_FALSE(result.attempts[1].peak_bytes);
  EXPECT_EQ(describe_probe(result, budget), "256 out of memory, 128 out of memory, 64 fits with 3.0 GiB peak");  // optimizer state included
}

TEST(BatchProbe, DescribesEachCandidate) {
  FakeGpu gpu{0, GiB / 2, /*oom_above=*/200};
  const ProbeBudget budget{std::int64_t(79.2 * double(GiB)), 0};
  const ProbeResult result = probe_local_batch(0, kMaxProbedBatch, budget, gpu.measure());
  EXPECT_EQ(result.batch, 128);  // 64 GiB x 1.1 = 70.4
  EXPECT_EQ(describe_probe(result, budget), "256 out of memory, 128 fits with 64.0 GiB peak");
  FakeGpu big{0, GiB};
  const ProbeResult r2 = probe_local_batch(128, kMaxProbedBatch, budget, big.measure());
  EXPECT_EQ(describe_probe(r2, budget), "128 needs 140.8 GiB of 79.2, 64 fits with 64.0 GiB peak");
}

TEST(BatchProbe, NeverBelowOne) {
  FakeGpu gpu{0, GiB};
  EXPECT_EQ(probe_local_batch(1, kMaxProbedBatch, ProbeBudget{2 * GiB, 0}, gpu.measure()).batch, 1);
  EXPECT_EQ(probe_local_batch(7, kMaxProbedBatch, ProbeBudget{2 * GiB, 0}, gpu.measure()).batch, 1);
}

TEST(BatchProbe, NotEvenOneFitsNamesTheMemory) {
  FakeGpu gpu{10 * GiB, 0};
  try {
    probe_local_batch(4, kMaxProbedBatch, ProbeBudget{8 * GiB, GiB}, gpu.measure());
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(),
                 "training.local_batch_size = auto: even a batch of 1 needs 12.0 GiB (peak 10.0 GiB x margin 1.1 + "
                 "optimizer state 1.0 GiB), but the GPU has 8.0 GiB; make the model smaller, use a larger GPU, or "
                 "set training.local_batch_size = 1 to try anyway");
  }
  EXPECT_EQ(gpu.tried, (std::vector<std::int64_t>{4, 2, 1}));
  FakeGpu oom{0, 0, /*oom_above=*/0};
  try {
    probe_local_batch(4, kMaxProbedBatch, ProbeBudget{8 * GiB, GiB}, oom.measure());
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("even a batch of 1 runs out of GPU memory (8.0 GiB available)"),
              std::string::npos)
        << e.what();
  }
}

TEST(BatchProbe, AResumedRunKeepsTheCheckpointsBatchWhenItFits) {
  EXPECT_EQ(prefer_saved_local_batch(/*probed=*/64, /*saved=*/32, /*per_rank=*/64), 32);
  EXPECT_EQ(prefer_saved_local_batch(64, 64, 64), 64);
  EXPECT_EQ(prefer_saved_local_batch(32, 64, 64), 32);  // no longer fits: the probe's
  EXPECT_EQ(prefer_saved_local_batch(64, 0, 64), 64);   // unknown
  EXPECT_EQ(prefer_saved_local_batch(16, 12, 48), 12);  // a size set by hand before, dividing the batch
  EXPECT_EQ(prefer_saved_local_batch(16, 5, 48), 16);   // does not divide the batch per rank
  EXPECT_EQ(prefer_saved_local_batch(16, 12, 0), 12);   // no bound
}

}  // namespace
}  // namespace flashtrain::trainer

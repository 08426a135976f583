// What a run checks before step 1 (run_folder.h) and how a resumed run keeps
// its metrics: bad inputs and outputs stop it at once with an error naming
// them, a second run on a folder is refused, and metrics.jsonl holds one
// record per step after a resume.
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <sstream>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "flashtrain/config/resolved_config.h"
#include "flashtrain/trainer/checkpoint/checkpoint_folder.h"
#include "flashtrain/trainer/checkpoint/remove_tree.h"
#include "flashtrain/trainer/run/run_folder.h"
#include "flashtrain/trainer/run/trainer.h"
#include "tiny_run.h"

namespace flashtrain::trainer {
namespace {

namespace fs = std::filesystem;
using testing::TinyRun;

// The error a Trainer with `resolved` throws before it trains; "" if none.
template <typename Error>
std::string construction_error(const config::ResolvedConfig& resolved) {
  std::ostringstream log;
  try {
    Trainer trainer(resolved, log);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(RunInputs, ACorruptValidationShardStopsTheRunBeforeStepOne) {
  TinyRun run;
  testing::write_file(run.dir() / "bad_val_000000.bin", std::string(2000, 'x'));
  const std::string what = construction_error<config::ConfigError>(
      run.config({"--data.val_shards=" + (run.dir() / "bad_val_*.bin").string()}));
  EXPECT_NE(what.find("data.val_shards"), std::string::npos) << what;
  EXPECT_NE(what.find("bad_val_000000.bin"), std::string::npos) << what;
  EXPECT_FALSE(fs::exists(run.dir() / "out" / "checkpoints" / "step_00000030"));
}

TEST(RunInputs, AnEmptyTokenizerStopsTheRunBeforeStepOne) {
  TinyRun run;
  testing::write_file(run.dir() / "tokenizer.model", "");
  const std::string what = construction_error<config::ConfigError>(
      run.config({"--tokenizer.path=" + (run.dir() / "tokenizer.model").string()}));
  EXPECT_NE(what.find("tokenizer.path"), std::string::npos) << what;
  EXPECT_NE(what.find("not a SentencePiece model"), std::string::npos) << what;
}

TEST(RunInputs, AnUnwritableCheckpointFolderStopsTheRunBeforeStepOne) {
  TinyRun run;
  // A folder under a regular file cannot be made (chmod would not stop root).
  testing::write_file(run.dir() / "out" / "file", "x");
  const std::string what =
      construction_error<std::runtime_error>(run.config({"--checkpoint.folder=file/checkpoints"}));
  EXPECT_NE(what.find("checkpoint.folder: cannot create"), std::string::npos) << what;
  EXPECT_NE(what.find((run.dir() / "out" / "file" / "checkpoints").string()), std::string::npos) << what;
}

// training.device = auto on a machine without a GPU says so when the model is
// large for a CPU (on a GPU machine the run lands on the GPU: no warning).
TEST(RunStart, AutoDeviceOnTheCpuWarnsForALargeModel) {
  TinyRun run;
  const std::vector<std::string> large = {"--training.device=auto", "--model.dim=1024", "--model.n_heads=16",
                                          "--model.head_dim=64", "--model.n_layers=2"};
  std::ostringstream log;
  Trainer trainer(run.config(large), log);
  const bool warned = log.str().find("warning: training.device = auto found no GPU") != std::string::npos;
  EXPECT_EQ(warned, !torch::cuda::is_available()) << log.str();
  std::ostringstream small_log;
  Trainer small(run.config({"--training.device=auto"}, "small"), small_log);
  EXPECT_EQ(small_log.str().find("warning:"), std::string::npos) << small_log.str();
}

TEST(RunFolder, ASecondRunOnTheFolderIsRefusedNamingTheHolder) {
  TinyRun run;
  {
    RunFolderLock held(run.dir() / "out");
    const std::string what = construction_error<std::runtime_error>(run.config({"--training.steps=3"}));
    EXPECT_NE(what.find("another flashtrain run (pid " + std::to_string(::getpid()) + ")"), std::string::npos)
        << what;
    EXPECT_NE(what.find((run.dir() / "out").string()), std::string::npos) << what;
  }
  // Released with its holder: the run starts.
  std::ostringstream log;
  Trainer trainer(run.config({"--training.steps=3"}), log);
  EXPECT_EQ(trainer.run().step, 3);
}

TEST(RunFolder, AResumedRunKeepsOneRecordPerStep) {
  TinyRun run;
  const std::vector<std::string> flags = {"--training.steps=9", "--checkpoint.interval=3",
                                          "--checkpoint.keep_last=0", "--validation.every=3",
                                          "--metrics.log_every=1"};
  {
    std::ostringstream log;
    Trainer trainer(run.config(flags), log);
    trainer.run();
  }
  // As if killed after step 9's records but before its checkpoint; a line
  // cut off by the kill at the end.
  const CheckpointFolder folder(run.dir() / "out" / "checkpoints");
  remove_tree(folder.path_for_step(9));
  const fs::path metrics = run.dir() / "out" / "metrics.jsonl";
  testing::write_file(metrics, testing::read_file(metrics) + "{\"kind\": \"train\", \"st");

  std::ostringstream log;
  Trainer trainer(run.config(flags), log);
  EXPECT_EQ(trainer.step(), 6);
  EXPECT_NE(log.str().find("metrics: dropped "), std::string::npos) << log.str();
  trainer.run();

  std::map<std::pair<std::string, std::int64_t>, int> records;
  std::istringstream lines(testing::read_file(metrics));
  for (std::string line; std::getline(lines, line);) {
    const nlohmann::json record = nlohmann::json::parse(line);  // every line parses
    if (record["kind"] == "train" || record["kind"] == "val") ++records[{record["kind"], record["step"]}];
  }
  for (std::int64_t step = 1; step <= 9; ++step)
    EXPECT_EQ((records[{"train", step}]), 1) << "train records of step " << step;
  for (std::int64_t step : {3, 6, 9}) EXPECT_EQ((records[{"val", step}]), 1) << "val records of step " << step;
}

// The records of metrics.jsonl by (kind, step), and its start events.
struct MetricsCounts {
  std::map<std::pair<std::string, std::int64_t>, int> records;
  int starts = 0;
};

MetricsCounts count_metrics(const fs::path& path) {
  MetricsCounts counts;
  std::istringstream lines(testing::read_file(path));
  for (std::string line; std::getline(lines, line);) {
    const nlohmann::json record = nlohmann::json::parse(line);  // every line parses
    if (record["kind"] == "train" || record["kind"] == "val") ++counts.records[{record["kind"], record["step"]}];
    if (record["kind"] == "event" && record["event"] == "start") ++counts.starts;
  }
  return counts;
}

// A run that starts from step 0 over the metrics of an earlier start that left
// no checkpoint (killed before its first one; checkpoints off, or
// checkpoint.resume = none) starts the file afresh: one record per step of
// this run, one start event, nothing of the earlier one.
TEST(RunFolder, ARunStartingFromScratchStartsItsMetricsAfresh) {
  TinyRun run;
  const fs::path metrics = run.dir() / "out" / "metrics.jsonl";
  const std::vector<std::string> flags = {"--metrics.log_every=1", "--validation.every=0"};
  const auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), flags.begin(), flags.end());
    return run.config(more);
  };
  {
    std::ostringstream log;
    Trainer trainer(with({"--training.steps=6", "--checkpoint.interval=0"}), log);
    trainer.run();
  }
  // As if killed after step 6's records but before its checkpoint.
  remove_tree(CheckpointFolder(run.dir() / "out" / "checkpoints").path_for_step(6));
  for (const std::vector<std::string>& second :
       {std::vector<std::string>{"--training.steps=4"},
        std::vector<std::string>{"--training.steps=3", "--checkpoint.enable=false", "--checkpoint.resume=none"}}) {
    const std::int64_t steps = std::stoll(second[0].substr(second[0].find('=') + 1));
    std::ostringstream log;
    Trainer trainer(with(second), log);
    EXPECT_EQ(trainer.step(), 0);
    EXPECT_NE(log.str().find("metrics: dropped the "), std::string::npos) << log.str();
    trainer.run();
    const MetricsCounts counts = count_metrics(metrics);
    EXPECT_EQ(counts.starts, 1) << testing::read_file(metrics);
    for (std::int64_t step = 1; step <= 6; ++step)
      EXPECT_EQ((counts.records.count({"train", step}) ? counts.records.at({"train", step}) : 0), step <= steps ? 1 : 0)
          << "train records of step " << step << " after a run of " << steps;
  }
}

}  // namespace
}  // namespace flashtrain::trainer

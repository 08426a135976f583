// The train loop on generated shards: it learns, resumes bit for bit, survives
// an interrupted save, normalises the loss over the global batch, and stops on
// repeated NaNs.
#include <gtest/gtest.h>

#include <cstdlib>
#include <sys/wait.h>
#include <unistd.h>

#include <torch/torch.h>

#include <fstream>
#include <map>
#include <numeric>
#include <sstream>

#include "flashtrain/config/json.h"
#include "flashtrain/config/schema.h"
#include "flashtrain/data/error.h"
#include "flashtrain/trainer/checkpoint/checkpoint_folder.h"
#include "flashtrain/trainer/checkpoint/staged_directory.h"
#include "flashtrain/trainer/run/trainer.h"
#include "flashtrain/trainer/checkpoint/training_checkpoint.h"
#include "tiny_run.h"

namespace flashtrain::trainer {
namespace {

namespace fs = std::filesystem;
using testing::TinyRun;

struct Outcome {
  TrainResult result;
  std::vector<double> losses;  // per step, in order
  std::vector<torch::Tensor> parameters;
  std::string log;
};

// Trains with `resolved`; `stop_at` > 0 requests a stop after that step.
Outcome train(const config::ResolvedConfig& resolved, std::int64_t stop_at = 0) {
  std::ostringstream log;
  Trainer trainer(resolved, log);
  Outcome out;
  trainer.set_step_callback([&](const StepReport& r) {
    out.losses.push_back(r.loss);
    if (r.step == stop_at) trainer.request_stop();
  });
  out.result = trainer.run();
  for (const torch::Tensor& p : trainer.model().parameters()) out.parameters.push_back(p.detach().clone());
  out.log = log.str();
  return out;
}

double mean(const std::vector<double>& v, std::size_t from, std::size_t to) {
  return std::accumulate(v.begin() + std::ptrdiff_t(from), v.begin() + std::ptrdiff_t(to), 0.0) / double(to - from);
}

void expect_same_parameters(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << "parameter " << i;
}

// What a resume says changed since the checkpoint: every non-model key whose
// value differs, old -> new.
TEST(TrainingCheckpoint, ConfigChangesNameEachChangedKey) {
  config::Config before;
  before.training.steps = 10;
  config::Config after = before;
  after.training.steps = 20;
  const std::vector<std::string> changes = config_changes(config::to_json(before), after);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0], "training.steps: 10 -> 20");
  EXPECT_TRUE(config_changes(config::to_json(before), before).empty());
}

TEST(TrainingLoop, LossGoesDownOnTheTinyCorpus) {
  TinyRun run;
  const Outcome out = train(run.config({"--training.steps=30"}));
  ASSERT_EQ(out.result.status, TrainStatus::kFinished) << out.log;
  ASSERT_EQ(out.losses.size(), 30u);
  EXPECT_NEAR(out.losses.front(), std::log(32.0), 0.3) << "an untrained model guesses uniformly";
  EXPECT_LT(mean(out.losses, 25, 30), mean(out.losses, 0, 5) - 1.0) << out.log;
  ASSERT_TRUE(out.result.last_validation);
  EXPECT_LT(out.result.last_validation->loss, 2.0) << out.log;  // uniform: 3.47, best: 0.69
  EXPECT_NEAR(out.result.last_validation->perplexity, std::exp(out.result.last_validation->loss), 1e-9);
  EXPECT_EQ(out.result.last_checkpoint.filename(), "step_00000030") << "a checkpoint at the end";
}

TEST(TrainingLoop, MetricsAreJsonLines) {
  TinyRun run;
  const Outcome out = train(run.config({"--training.steps=20", "--metrics.log_every=5", "--validation.every=10"}));
  std::ifstream in(run.dir() / "out" / "metrics.jsonl");
  std::vector<std::int64_t> train_steps, val_steps;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json record = nlohmann::json::parse(line);
    if (record["kind"] == "train") {
      train_steps.push_back(record["step"]);
      for (const char* key : {"loss", "lr", "grad_norm", "tokens_seen", "tokens_per_second"})
        EXPECT_TRUE(record.contains(key)) << key << " missing in " << line;
    } else if (record["kind"] == "val") {
      val_steps.push_back(record["step"]);
      EXPECT_GT(record["perplexity"].get<double>(), 1.0);
    }
  }
  EXPECT_EQ(train_steps, (std::vector<std::int64_t>{1, 5, 10, 15, 20}));
  EXPECT_EQ(val_steps, (std::vector<std::int64_t>{10, 20}));
  EXPECT_NE(out.log.find("step  5/20 | loss"), std::string::npos) << out.log;
}

// The last checkpoint is written before the final validation, so a run
// stopped or killed during that validation loses nothing: resumed at its last
// step it validates (here: run again after it finished).
TEST(TrainingLoop, TheCheckpointPrecedesTheFinalValidationAndAResumeAtTheEndValidates) {
  TinyRun run;
  train(run.config({"--training.steps=6", "--validation.every=3"}));
  const Outcome again = train(run.config({"--training.steps=6", "--validation.every=3"}));
  EXPECT_NE(again.log.find("nothing to train: at step 6"), std::string::npos) << again.log;
  EXPECT_NE(again.log.find("validation at step 6"), std::string::npos) << again.log;
  std::ifstream in(run.dir() / "out" / "metrics.jsonl");
  std::vector<std::string> at_step_6;  // the kinds and events of step 6, in order
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json record = nlohmann::json::parse(line);
    if (record.value("step", -1) != 6) continue;
    const char* field = record["kind"] == "event" ? "event" : "kind";
    at_step_6.push_back(record[field].get<std::string>());
  }
  EXPECT_EQ(at_step_6, (std::vector<std::string>{"train", "checkpoint", "val", "resume", "val"}));
}

// On a GPU the progress lines carry the peak memory of their own interval: a
// 512 MiB tensor made and freed after step 2 shows in the line of step 2 only.
// On the CPU there is no such field (skipped, saying so).
TEST(TrainingLoop, PeakGpuMemoryIsPerLogInterval) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no GPU: the CPU progress line has no memory field";
  TinyRun run;
  const config::ResolvedConfig resolved = run.config(
      {"--training.steps=4", "--metrics.log_every=2", "--validation.every=0", "--training.device=cuda"});
  std::ostringstream log;
  Trainer trainer(resolved, log);
  trainer.set_step_callback([](const StepReport& r) {
    if (r.step == 2) torch::empty({512 << 20}, torch::TensorOptions(torch::kUInt8).device(torch::kCUDA));
  });
  trainer.run();
  std::ifstream in(run.dir() / "out" / "metrics.jsonl");
  std::map<std::int64_t, double> peak_gib;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json record = nlohmann::json::parse(line);
    if (record["kind"] == "train") peak_gib[record["step"]] = record.at("peak_memory_gib").get<double>();
  }
  ASSERT_EQ(peak_gib.size(), 3u) << log.str();  // steps 1, 2, 4
  // Relative to step 4: earlier tests in this process may hold device memory (op caches).
  EXPECT_GE(peak_gib[2] - peak_gib[4], 0.45) << log.str();
  EXPECT_NE(log.str().find(" GiB"), std::string::npos) << log.str();
}

// 2N steps straight and N + resume + N give the same losses and weights, bit
// for bit, with gradient accumulation and validation in between.
TEST(TrainingLoop, ResumeReproducesAnUninterruptedRunExactly) {
  TinyRun run;
  const std::vector<std::string> flags = {"--training.steps=12", "--training.global_batch_size=16",
                                          "--validation.every=4"};
  const Outcome straight = train(run.config(flags, "straight"));
  ASSERT_EQ(straight.losses.size(), 12u);

  const Outcome first = train(run.config(flags, "resumed"), /*stop_at=*/6);
  EXPECT_EQ(first.result.status, TrainStatus::kStopped);
  EXPECT_EQ(first.result.step, 6);
  EXPECT_EQ(first.result.last_checkpoint.filename(), "step_00000006");
  const Outcome second = train(run.config(flags, "resumed"));
  EXPECT_NE(second.log.find("resumed from"), std::string::npos) << second.log;
  EXPECT_EQ(second.result.status, TrainStatus::kFinished);

  std::vector<double> joined = first.losses;
  joined.insert(joined.end(), second.losses.begin(), second.losses.end());
  ASSERT_EQ(joined.size(), 12u);
  for (std::size_t i = 0; i < 12; ++i) EXPECT_EQ(joined[i], straight.losses[i]) << "step " << i + 1;
  expect_same_parameters(second.parameters, straight.parameters);

  // Tokens seen: 12 steps x 16 sequences x 16 tokens.
  std::ifstream state(run.dir() / "resumed" / "checkpoints" / "step_00000012" / "state.json");
  EXPECT_EQ(nlohmann::json::parse(state)["tokens_seen"], 12 * 16 * 16);
}

// Dropout draws from torch's generators, which the checkpoint keeps: a run
// with dropout resumes to the uninterrupted run's losses, bit for bit (and
// the dropout does act: the losses differ from a run without it).
TEST(TrainingLoop, ResumeWithDropoutReproducesTheUninterruptedRun) {
  TinyRun run;
  const std::vector<std::string> flags = {"--training.steps=8", "--training.global_batch_size=16",
                                          "--validation.every=4", "--model.dropout=0.2"};
  const Outcome straight = train(run.config(flags, "straight"));
  ASSERT_EQ(straight.losses.size(), 8u);
  train(run.config(flags, "resumed"), /*stop_at=*/5);
  const Outcome second = train(run.config(flags, "resumed"));
  ASSERT_EQ(second.losses.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(second.losses[i], straight.losses[5 + i]) << "step " << i + 6;
  expect_same_parameters(second.parameters, straight.parameters);
  std::vector<std::string> without = flags;
  without.back() = "--model.dropout=0";
  EXPECT_NE(train(run.config(without, "without")).losses[1], straight.losses[1]);
}

// A CPU run's sums split over its intra-op threads: a resume on a machine
// whose default differs keeps the checkpoint's count, and says so, so the
// result is still bitwise the uninterrupted run's.
TEST(TrainingLoop, ResumeKeepsTheCheckpointsCpuThreadCount) {
  struct RestoreThreads {
    int count = at::get_num_threads();
    ~RestoreThreads() { at::set_num_threads(count); }
  } restore;
  const char* omp = std::getenv("OMP_NUM_THREADS");
  const std::string omp_value = omp ? omp : "";
  ::unsetenv("OMP_NUM_THREADS");  // set, it would take precedence (and the resume only warns)
  TinyRun run;
  const std::vector<std::string> flags = {"--training.steps=12"};
  at::set_num_threads(1);
  const Outcome straight = train(run.config(flags, "straight"));
  const Outcome first = train(run.config(flags, "resumed"), /*stop_at=*/6);
  at::set_num_threads(2);
  const Outcome second = train(run.config(flags, "resumed"));
  if (omp) ::setenv("OMP_NUM_THREADS", omp_value.c_str(), 1);
  EXPECT_NE(second.log.find("cpu threads: 1, the checkpoint's"), std::string::npos) << second.log;
  EXPECT_EQ(at::get_num_threads(), 1);
  std::vector<double> joined = first.losses;
  joined.insert(joined.end(), second.losses.begin(), second.losses.end());
  ASSERT_EQ(joined.size(), straight.losses.size());
  for (std::size_t i = 0; i < joined.size(); ++i) EXPECT_EQ(joined[i], straight.losses[i]) << "step " << i + 1;
  expect_same_parameters(second.parameters, straight.parameters);
}

// A crash during a save leaves a staging directory (or, written by hand, a
// step directory without manifest); a corrupt newer checkpoint fails its
// checksums. Resuming ignores all of them, continues from the last good one
// exactly, and deletes none of what they hold.
TEST(TrainingLoop, InterruptedAndCorruptSavesAreIgnoredOnResume) {
  TinyRun run;
  const std::vector<std::string> flags = {"--training.steps=12", "--checkpoint.keep_last=2"};
  const Outcome straight = train(run.config(flags, "straight"));
  const Outcome first = train(run.config(flags, "crashed"), /*stop_at=*/6);
  const CheckpointFolder folder(run.dir() / "crashed" / "checkpoints");
  ASSERT_EQ(folder.complete().size(), 1u);

  fs::copy(folder.path_for_step(6), folder.path_for_step(9), fs::copy_options::recursive);
  std::string weights = testing::read_file(folder.path_for_step(9) / "model.safetensors");
  weights[weights.size() - 3] ^= 0x10;
  testing::write_file(folder.path_for_step(9) / "model.safetensors", weights);
  testing::write_file(folder.path_for_step(12) / "model.safetensors", "partial");
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ::waitpid(dead, nullptr, 0);
  const fs::path staging = folder.path() / (".step_00000010.tmp-" + std::to_string(dead) + "-0");
  testing::write_file(staging / "model.safetensors", "half");

  const Outcome second = train(run.config(flags, "crashed"));
  EXPECT_NE(second.log.find("resumed from " + folder.path_for_step(6).string()), std::string::npos) << second.log;
  ASSERT_EQ(second.losses.size(), 6u);
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(second.losses[i], straight.losses[6 + i]) << "step " << i + 7;
  expect_same_parameters(second.parameters, straight.parameters);

  EXPECT_FALSE(fs::exists(staging));
  EXPECT_EQ(testing::read_file(folder.path() / "step_00000012.invalid-0" / "model.safetensors"), "partial");
  EXPECT_TRUE(fs::exists(folder.path() / "step_00000009.invalid-0" / kManifestFile));
  std::vector<std::int64_t> steps;
  for (const CheckpointEntry& e : folder.complete()) steps.push_back(e.step);
  EXPECT_EQ(steps, (std::vector<std::int64_t>{6, 12}));
}

// When every checkpoint of a run fails its check, the run stops with an error
// naming the checkpoint, what is wrong and the ways on, and moves nothing;
// --checkpoint.resume=none then starts over with the bad one set aside.
TEST(TrainingLoop, OnlyCheckpointCorruptStopsInsteadOfStartingOver) {
  TinyRun run;
  train(run.config({"--training.steps=6"}));
  const CheckpointFolder folder(run.dir() / "out" / "checkpoints");
  const fs::path weights = folder.path_for_step(6) / "model.safetensors";
  std::string bytes = testing::read_file(weights);
  for (std::size_t i = 0; i < 8; ++i) bytes[bytes.size() / 2 + i] ^= 0x5a;
  testing::write_file(weights, bytes);
  try {
    Trainer trainer(run.config({"--training.steps=12"}), std::cout);
    ADD_FAILURE() << "trained over a run whose only checkpoint is corrupt";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no usable checkpoint in " + folder.path().string()), std::string::npos) << what;
    EXPECT_NE(what.find("step_00000006: "), std::string::npos) << what;
    EXPECT_NE(what.find("model.safetensors"), std::string::npos) << what;
    EXPECT_NE(what.find("--checkpoint.resume=none"), std::string::npos) << what;
    EXPECT_NE(what.find("--checkpoint.resume=PATH"), std::string::npos) << what;
  }
  EXPECT_TRUE(fs::exists(weights)) << "the corrupt checkpoint was moved";
  EXPECT_EQ(testing::read_file(weights), bytes);

  std::ostringstream log;
  Trainer over(run.config({"--training.steps=12", "--checkpoint.resume=none"}), log);
  EXPECT_EQ(over.step(), 0);
  EXPECT_NE(log.str().find("starting over: the unusable " + folder.path_for_step(6).string()), std::string::npos)
      << log.str();
  EXPECT_EQ(testing::read_file(folder.path() / "step_00000006.invalid-0" / "model.safetensors"), bytes);
  EXPECT_TRUE(folder.complete().empty());
}

// A checkpoint directory without manifest.json (which a save never leaves: it
// renames the directory into place after writing the manifest) is not usable;
// when it is the only one, the run stops as for a corrupt one instead of
// starting over from step 0.
TEST(TrainingLoop, OnlyCheckpointWithoutManifestStopsInsteadOfStartingOver) {
  TinyRun run;
  train(run.config({"--training.steps=6"}));
  const CheckpointFolder folder(run.dir() / "out" / "checkpoints");
  fs::remove(folder.path_for_step(6) / kManifestFile);
  try {
    Trainer trainer(run.config({"--training.steps=12"}), std::cout);
    ADD_FAILURE() << "started over from step 0 past a checkpoint without manifest";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no usable checkpoint in " + folder.path().string()), std::string::npos) << what;
    EXPECT_NE(what.find("step_00000006: no manifest.json"), std::string::npos) << what;
    EXPECT_NE(what.find("--checkpoint.resume=none"), std::string::npos) << what;
  }
  EXPECT_TRUE(fs::exists(folder.path_for_step(6) / "model.safetensors")) << "moved or removed";

  std::ostringstream log;
  Trainer over(run.config({"--training.steps=12", "--checkpoint.resume=none"}), log);
  EXPECT_EQ(over.step(), 0);
  EXPECT_NE(log.str().find("starting over: the unusable " + folder.path_for_step(6).string()), std::string::npos)
      << log.str();
  EXPECT_TRUE(fs::exists(folder.path() / "step_00000006.invalid-0" / "model.safetensors"));
}

TEST(TrainingLoop, KeepsTheLastKCheckpoints) {
  TinyRun run;
  train(run.config({"--training.steps=12", "--checkpoint.interval=3", "--checkpoint.keep_last=2"}));
  std::vector<std::int64_t> steps;
  for (const CheckpointEntry& e : CheckpointFolder(run.dir() / "out" / "checkpoints").complete())
    steps.push_back(e.step);
  EXPECT_EQ(steps, (std::vector<std::int64_t>{9, 12}));
}

TEST(TrainingLoop, RefusesToMixRuns) {
  TinyRun run;
  train(run.config({"--training.steps=6", "--checkpoint.interval=3"}));
  const fs::path folder = run.dir() / "out" / "checkpoints";
  try {
    Trainer trainer(run.config({"--training.steps=6", "--checkpoint.resume=none"}), std::cout);
    ADD_FAILURE() << "started from scratch over an earlier run's checkpoints";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("holds checkpoints of an earlier run"), std::string::npos) << e.what();
  }
  try {
    Trainer trainer(run.config({"--training.steps=6", "--checkpoint.resume=" + (folder / "step_00000003").string()}),
                    std::cout);
    ADD_FAILURE() << "resumed an older checkpoint next to a newer one";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("would mix"), std::string::npos) << e.what();
  }
  // Another folder may start from it.
  std::ostringstream log;
  Trainer elsewhere(run.config({"--training.steps=6", "--checkpoint.resume=" + (folder / "step_00000003").string()},
                               "branch"),
                    log);
  EXPECT_EQ(elsewhere.step(), 3);
}

// A validation split with fewer windows than one global batch (but one a
// rank) is validated whole, each time, in one batch of what there is.
TEST(TrainingLoop, AValidationSplitSmallerThanABatchIsValidatedWhole) {
  TinyRun run;  // 4000 validation tokens: 3 windows of 1001, fewer than the batch of 8
  std::ostringstream log;
  Trainer trainer(run.config({"--data.seq_len=1000", "--training.steps=2", "--validation.every=1"}), log);
  trainer.run();
  EXPECT_NE(log.str().find("validation: data.val_shards holds 3 windows of data.seq_len + 1 tokens, fewer than a "
                           "batch of 8; each validation takes 3 of them (3 a rank)"),
            std::string::npos)
      << log.str();
  std::ifstream in(run.dir() / "out" / "metrics.jsonl");
  int validations = 0;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json record = nlohmann::json::parse(line);
    if (record["kind"] == "val") {
      ++validations;
      EXPECT_TRUE(std::isfinite(record.at("loss").get<double>())) << line;
    }
  }
  EXPECT_EQ(validations, 2) << log.str();
}

// A split too short for one global batch stops the run before step 1 with an
// error that names the keys, and so does a validation set with a token outside
// the vocabulary (the validation split is otherwise first read at the first
// validation).
TEST(TrainingLoop, SplitsTooShortForABatchAreRefusedBeforeStepOne) {
  TinyRun run;  // 4000 validation tokens: 3 windows of 1001; 32000 training tokens: 30
  const auto refused = [&](const std::vector<std::string>& flags, const std::string& words) {
    try {
      Trainer trainer(run.config(flags), std::cout);
      ADD_FAILURE() << "started with " << flags.back();
    } catch (const config::ConfigError& e) {
      for (const std::string& w : {std::string("fewer than one global batch"), words})
        EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << e.what();
    }
  };
  refused({"--data.seq_len=5000", "--training.local_batch_size=4"},
          "data.val_shards holds 0 windows of data.seq_len + 1 = 5001 tokens");
  refused({"--data.seq_len=1000", "--training.local_batch_size=31"}, "data.train_shards holds 30 windows");
  // A token outside the vocabulary in the validation set: refused before step 1 too.
  std::vector<std::int32_t> tokens = testing::rule_tokens(4000, 3);
  tokens[100] = 60000;
  data::write_shard((run.dir() / "val_000000.bin").string(), data::TokenFormat::kUint16, tokens);
  try {
    Trainer trainer(run.config(), std::cout);
    ADD_FAILURE() << "started with token 60000 in the validation shard";
  } catch (const data::DataError& e) {
    EXPECT_NE(std::string(e.what()).find("token 60000 at index 100"), std::string::npos) << e.what();
  }
  const fs::path checkpoints = run.dir() / "out" / "checkpoints";
  if (fs::exists(checkpoints)) {  // refused before any step: no checkpoint
    for (const auto& entry : fs::directory_iterator(checkpoints))
      EXPECT_NE(entry.path().filename().string().rfind("step_", 0), 0u) << entry.path();
  }
  // Without validation the validation split is not needed.
  std::ostringstream log;
  Trainer trainer(run.config({"--data.seq_len=1000", "--validation.every=0", "--training.steps=1"}), log);
  EXPECT_EQ(trainer.run().status, TrainStatus::kFinished) << log.str();
}

// A checkpoint's data cursor continues only the stream it was saved from:
// after a change of seed, shuffle or window length the resume stops before
// step 1 at the changed key, naming both ways forward; with
// checkpoint.resume_data = false the weights, optimizer and step continue and
// the data starts afresh.
TEST(TrainingLoop, ResumeAfterChangingTheDataStreamNamesTheKeyAndAWayForward) {
  TinyRun run;
  const std::vector<std::string> flags = {"--training.steps=12"};
  const Outcome first = train(run.config(flags), /*stop_at=*/6);
  ASSERT_EQ(first.result.step, 6);
  const auto refused = [&](const std::string& change, const std::vector<std::string>& words) {
    std::vector<std::string> changed = flags;
    changed.push_back(change);
    try {
      Trainer trainer(run.config(changed), std::cout);
      ADD_FAILURE() << "resumed after " << change;
    } catch (const config::ConfigError& e) {
      for (const std::string& w : words) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("checkpoint.resume_data = false"), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind(change + ":", 0), 0u) << e.what();  // located at the flag
    }
  };
  refused("--data.seq_len=12", {"data.seq_len is 12 here", "data.seq_len = 16", "step_00000006"});
  refused("--training.seed=8", {"training.seed is 8 here", "training.seed = 7"});
  refused("--data.shuffle=false", {"data.shuffle is false here", "data.shuffle = true"});

  std::vector<std::string> afresh = flags;
  afresh.insert(afresh.end(), {"--data.seq_len=12", "--checkpoint.resume_data=false"});
  const Outcome second = train(run.config(afresh));
  EXPECT_EQ(second.result.status, TrainStatus::kFinished) << second.log;
  EXPECT_EQ(second.result.step, 12);
  EXPECT_EQ(second.losses.size(), 6u);  // steps 7..12
  EXPECT_NE(second.log.find("resumed from"), std::string::npos) << second.log;
  EXPECT_NE(second.log.find("data: drawn afresh"), std::string::npos) << second.log;
}

// Two runs in two dump folders that share one absolute checkpoint.folder:
// the second is refused while the first holds it.
TEST(TrainingLoop, TwoRunsCannotShareACheckpointFolder) {
  TinyRun run;
  const std::string shared = "--checkpoint.folder=" + (run.dir() / "shared_checkpoints").string();
  std::ostringstream log;
  Trainer first(run.config({shared}, "first"), log);
  try {
    Trainer second(run.config({shared}, "second"), std::cout);
    ADD_FAILURE() << "two runs share " << shared;
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("another flashtrain run"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("shared_checkpoints"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("set another checkpoint.folder"), std::string::npos) << e.what();
  }
}

TEST(TrainingLoop, ResumeRefusesAnotherModel) {
  TinyRun run;
  train(run.config({"--training.steps=3"}));
  try {
    Trainer trainer(run.config({"--training.steps=6", "--model.dim=64", "--model.head_dim=32"}), std::cout);
    ADD_FAILURE() << "loaded a checkpoint of another model";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("model.dim: checkpoint 32, config 64"), std::string::npos) << e.what();
  }
}

// A checkpoint saved before a [model] key existed resumes when the config
// leaves that key at its default (what the code did before it), not otherwise.
TEST(TrainingLoop, ResumeTakesAMissingModelKeyAsItsDefault) {
  config::Config config;
  nlohmann::json saved = config::to_json(config);
  saved["model"].erase("structure");
  EXPECT_NO_THROW(check_same_model(saved, config, "old checkpoint"));
  config.model.structure = "plain";
  try {
    check_same_model(saved, config, "old checkpoint");
    ADD_FAILURE() << "a plain model resumed a checkpoint of residual blocks";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("model.structure: checkpoint (missing), config \"plain\""),
              std::string::npos)
        << e.what();
  }
}

// The initialisation keys reach the recurrent blocks, a bias range upside down
// is refused naming both keys, and a resume ignores them (they say how the
// parameters start; the checkpoint replaces that).
TEST(TrainingLoop, InitialisationKeysReachTheModelAndDoNotStopAResume) {
  TinyRun run;
  {
    std::ostringstream log;
    Trainer fresh(run.config({"--training.steps=1", "--model.retain_bias_min=2.5",
                              "--model.retain_bias_max=2.5", "--model.recurrent_init_scale=0"}),
                  log);
    int recurrent = 0;
    for (const auto& p : fresh.model().named_parameters()) {
      const std::string& name = p.key();
      if (name.size() > 2 && name.substr(name.size() - 2) == ".r") {
        ++recurrent;
        EXPECT_EQ(p.value().abs().max().item<float>(), 0.f) << name;
      }
      if (name.size() > 2 && name.substr(name.size() - 2) == ".b" && p.value().dim() == 3) {
        // [biases, heads, head_dim]: slot 1 is the LSTM's forget gate.
        EXPECT_TRUE(torch::allclose(p.value()[1], torch::full_like(p.value()[1], 2.5))) << name;
        EXPECT_EQ(p.value()[0].abs().max().item<float>(), 0.f) << name;
      }
    }
    EXPECT_EQ(recurrent, 1);
  }
  try {
    run.config({"--model.retain_bias_min=4", "--model.retain_bias_max=1"});
    ADD_FAILURE() << "accepted retain_bias_min above retain_bias_max";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("model.retain_bias_min (4"), std::string::npos) << e.what();
  }
  train(run.config({"--training.steps=3"}));
  std::ostringstream log;
  Trainer resumed(run.config({"--training.steps=6", "--model.retain_bias_min=0", "--model.retain_bias_max=0",
                              "--model.recurrent_init_scale=0.5", "--model.recompute_layers=1"}),
                  log);
  EXPECT_EQ(resumed.step(), 3);
  // A key that shapes the parameters does stop it, naming the key.
  try {
    std::ostringstream refused;
    Trainer wider(run.config({"--training.steps=6", "--model.head_dim=8"}), refused);
    ADD_FAILURE() << "resumed with another head_dim";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("model.head_dim"), std::string::npos) << e.what();
  }
}

// The schema marks which [model] keys may change on resume: how the op runs
// and how parameters start, nothing that shapes them.
TEST(TrainingLoop, TheSchemaNamesTheModelKeysAResumeMayChange) {
  std::vector<std::string> free_keys;
  for (const config::KeySpec& key : config::schema().keys())
    if (key.section == "model" && !key.shapes_parameters) free_keys.emplace_back(key.name);
  EXPECT_EQ(free_keys, (std::vector<std::string>{"backend", "recompute_layers", "wavefront_chunks", "dropout", "retain_bias_min", "retain_bias_max",
                                                 "recurrent_init_scale"}));
}

// model.wavefront_chunks from the config to the model: three blocks in four
// chunks train to the losses of block after block (up to float32 summation
// order), validation included.
TEST(TrainingLoop, TheWavefrontTrainsLikeBlockAfterBlock) {
  TinyRun run;
  const std::vector<std::string> flags = {"--training.steps=5", "--model.n_layers=3", "--validation.every=5"};
  std::vector<std::string> waved = flags;
  waved.push_back("--model.wavefront_chunks=4");
  const Outcome whole = train(run.config(flags, "whole"));
  const Outcome chunked = train(run.config(waved, "chunked"));
  ASSERT_EQ(whole.losses.size(), 5u);
  ASSERT_EQ(chunked.losses.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) EXPECT_NEAR(chunked.losses[i], whole.losses[i], 1e-5) << "step " << i + 1;
}

// The loss is normalised by the scored tokens of the whole global batch, so
// accumulating two half batches equals one full batch - also for a task whose
// sequences, and so scored tokens, differ in length (S5: a target per token).
TEST(TrainingLoop, AccumulationMatchesOneLargeBatch) {
  TinyRun run;
  const auto compare = [](const Outcome& whole, const Outcome& halves) {
    ASSERT_EQ(whole.losses.size(), halves.losses.size());
    for (std::size_t i = 0; i < whole.losses.size(); ++i)
      EXPECT_NEAR(whole.losses[i], halves.losses[i], 1e-5) << "step " << i + 1;
  };
  compare(train(run.config({"--training.steps=4", "--training.local_batch_size=8"}, "whole")),
          train(run.config({"--training.steps=4", "--training.local_batch_size=4", "--training.global_batch_size=8"},
                           "halves")));

  const auto task = [&](const std::vector<std::string>& batch, const std::string& folder) {
    std::vector<std::string> flags = {"--data.task=s5",           "--data.train_shards=",
                                      "--data.val_shards=",       "--model.vocab_size=0",
                                      "--data.task_train_min_len=2", "--data.task_train_max_len=16",
                                      "--data.task_val_min_len=8", "--data.task_val_max_len=16",
                                      "--training.steps=4",       "--validation.every=0"};
    flags.insert(flags.end(), batch.begin(), batch.end());
    return run.config(flags, folder);
  };
  const Outcome whole = train(task({"--training.local_batch_size=8"}, "task_whole"));
  const Outcome halves = train(task({"--training.local_batch_size=4", "--training.global_batch_size=8"}, "task_halves"));
  compare(whole, halves);
}

// local_batch_size = auto on the CPU: no probe, the largest power of two
// <= min(16, global batch per rank) dividing it; a resumed run keeps the
// checkpoint's local batch size when that one still fits.
TEST(TrainingLoop, AutoLocalBatchOnTheCpuAndOnResume) {
  TinyRun run;
  const Outcome fixed = train(run.config({"--training.steps=4", "--training.local_batch_size=8"}, "fixed"));
  const Outcome automatic =
      train(run.config({"--training.steps=4", "--training.local_batch_size=auto", "--training.global_batch_size=8"},
                       "auto"));
  EXPECT_NE(automatic.log.find("local batch: auto -> 8 (on the CPU nothing is probed"), std::string::npos)
      << automatic.log;
  EXPECT_NE(automatic.log.find("batch: 8 x 16 tokens x 1 accumulation"), std::string::npos) << automatic.log;
  ASSERT_EQ(automatic.losses.size(), fixed.losses.size());
  for (std::size_t i = 0; i < fixed.losses.size(); ++i) EXPECT_EQ(automatic.losses[i], fixed.losses[i]) << i;
  expect_same_parameters(automatic.parameters, fixed.parameters);
  // The checkpoint records the size auto resolved to.
  std::ifstream state(run.dir() / "auto" / "checkpoints" / "step_00000004" / "state.json");
  EXPECT_EQ(nlohmann::json::parse(state)["world"]["local_batch_size"], 8);

  // Started with 4 x 2 accumulation; resumed with auto: 4 still fits, so the layout stays.
  train(run.config({"--training.steps=2", "--training.local_batch_size=4", "--training.global_batch_size=8"},
                   "resumed"));
  const Outcome resumed = train(
      run.config({"--training.steps=4", "--training.local_batch_size=auto", "--training.global_batch_size=8"},
                 "resumed"));
  EXPECT_NE(resumed.log.find("local batch: auto -> 4 "), std::string::npos) << resumed.log;
  EXPECT_NE(resumed.log.find("kept the checkpoint's 4"), std::string::npos) << resumed.log;
  EXPECT_NE(resumed.log.find("batch: 4 x 16 tokens x 2 accumulation"), std::string::npos) << resumed.log;
  EXPECT_EQ(resumed.result.step, 4);
}

TEST(TrainingLoop, StopsAfterKNonfiniteStepsInARowWithoutUpdating) {
  TinyRun run;
  std::ostringstream log;
  Trainer trainer(run.config({"--training.steps=20", "--training.max_nonfinite_steps=3"}), log);
  {
    torch::NoGradGuard no_grad;
    trainer.model().named_parameters()["embedding.weight"].fill_(std::nan(""));
  }
  std::vector<torch::Tensor> before;
  for (const torch::Tensor& p : trainer.model().parameters()) before.push_back(p.detach().clone());
  std::vector<bool> skipped;
  trainer.set_step_callback([&](const StepReport& r) { skipped.push_back(r.skipped); });
  const TrainResult result = trainer.run();
  EXPECT_EQ(result.status, TrainStatus::kNonfinite);
  EXPECT_EQ(result.step, 3);
  EXPECT_EQ(skipped, (std::vector<bool>{true, true, true}));
  const auto parameters = trainer.model().parameters();
  for (std::size_t i = 0; i < parameters.size(); ++i)
    EXPECT_TRUE(torch::allclose(parameters[i], before[i], 0, 0, /*equal_nan=*/true)) << "parameter " << i;
  EXPECT_TRUE(result.last_checkpoint.empty());
  EXPECT_NE(log.str().find("update skipped (3 in a row, stop at 3)"), std::string::npos) << log.str();
}

TEST(TrainingLoop, TasksReportScaledAccuracy) {
  TinyRun run;
  const Outcome out = train(run.config({"--data.task=parity", "--data.train_shards=", "--data.val_shards=",
                                        "--model.vocab_size=0", "--data.task_train_max_len=8",
                                        "--data.task_val_min_len=8", "--data.task_val_max_len=16",
                                        "--training.steps=5", "--validation.every=5"}));
  ASSERT_TRUE(out.result.last_validation);
  ASSERT_TRUE(out.result.last_validation->scaled_accuracy);
  const double accuracy = *out.result.last_validation->accuracy;
  EXPECT_GE(accuracy, 0.0);
  EXPECT_LE(accuracy, 1.0);
  EXPECT_DOUBLE_EQ(*out.result.last_validation->scaled_accuracy, 2 * accuracy - 1);  // C = 2
  EXPECT_NE(out.log.find("scaled accuracy"), std::string::npos) << out.log;
}

}  // namespace
}  // namespace flashtrain::trainer

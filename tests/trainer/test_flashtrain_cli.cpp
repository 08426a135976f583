// The flashtrain executable as users meet it: exit statuses, messages without
// stack traces, --print-config, and SIGINT saving a checkpoint.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "flashtrain/trainer/checkpoint/checkpoint_folder.h"
#include "flashtrain_process.h"
#include "scratch_dir.h"

namespace flashtrain::trainer {
namespace {

namespace fs = std::filesystem;
using testing::expect_clean_error;
using testing::ProcessRun;
using testing::read_file;
using testing::run_flashtrain;
using testing::ScratchDir;
using testing::start;
using testing::tiny_task_run;
using testing::wait_for;

TEST(FlashtrainCli, HelpAndPrintConfig) {
  const ProcessRun help = run_flashtrain({"--help"});
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.output.find("usage: flashtrain"), std::string::npos);
  const ProcessRun printed = run_flashtrain({"--config", "configs/quickstart.toml", "--training.steps=7", "--print-config"});
  EXPECT_EQ(printed.status, 0) << printed.output;
  EXPECT_NE(printed.output.find("[model]"), std::string::npos);
  EXPECT_NE(printed.output.find("steps = 7"), std::string::npos);
}

TEST(FlashtrainCli, ConfigErrorsExitWith2AndTheirPosition) {
  ScratchDir dir;
  testing::write_file(dir / "bad.toml", "[optimizer]\nlerning_rate = 3e-4\n");
  expect_clean_error(run_flashtrain({"--config", (dir / "bad.toml").string()}), 2,
                     "bad.toml:2:1: error: unknown key 'lerning_rate' in [optimizer]; did you mean 'lr'?");
  expect_clean_error(run_flashtrain({"--config", "configs/quickstart.toml", "--training.steps=abc"}), 2,
                     "--training.steps=abc: error:");
  expect_clean_error(run_flashtrain({"--config", (dir / "missing.toml").string()}), 2, "missing.toml");
  // A tokenizer file that exists, so the check reached is the shards' (the
  // small corpus need not exist: the GPU machine runs the suite without it).
  testing::write_file(dir / "tokenizer.model", "not read");
  expect_clean_error(run_flashtrain({"--config", "configs/quickstart.toml",
                                     "--tokenizer.path=" + (dir / "tokenizer.model").string(),
                                     "--data.train_shards=/nonexistent/x_*.bin"}),
                     2, "no file matches data.train_shards");
  expect_clean_error(run_flashtrain({"tasks", "--config", "configs/quickstart.toml"}), 2, "data.task");
}

TEST(FlashtrainCli, AnErrorWithoutALocationNamesTheProgram) {
  const ProcessRun r = run_flashtrain({"tasks", "--training.steps=1"});
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_EQ(r.output.rfind("flashtrain: error: the tasks subcommand trains on a state-tracking task", 0), 0u)
      << r.output;
}

TEST(FlashtrainCli, UsageErrorsExitWith2) {
  expect_clean_error(run_flashtrain({"trian"}), 2, "unknown subcommand 'trian'");
  expect_clean_error(run_flashtrain({}), 2, "no --config given");
  expect_clean_error(run_flashtrain({"demo"}), 2, "unknown subcommand 'demo'");
}

TEST(FlashtrainCli, RunFailuresExitWith1WithoutAStackTrace) {
  ScratchDir dir;
  // eval before any training: there is no checkpoint.
  auto args = tiny_task_run(dir / "out");
  args.insert(args.begin(), "eval");
  expect_clean_error(run_flashtrain(args), 1, "no checkpoint in");
}

// Waits up to a minute for a run of 1000000 steps to log `steps` steps in `log`.
void wait_for_steps(const fs::path& log, int steps) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  const auto steps_logged = [&] {
    const std::string text = read_file(log);
    int count = 0;
    for (auto at = text.find("/1000000 | loss"); at != std::string::npos; at = text.find("/1000000 | loss", at + 1))
      ++count;
    return count;
  };
  while (steps_logged() < steps && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

TEST(FlashtrainCli, SigintSavesACheckpointAndTheSameCommandContinues) {
  ScratchDir dir;
  auto args = tiny_task_run(dir / "out");
  args.push_back("--training.steps=1000000");
  const pid_t pid = start(args, dir / "first.log");
  wait_for_steps(dir / "first.log", 3);
  ::kill(pid, SIGINT);
  const int status = wait_for(pid);
  const std::string first = read_file(dir / "first.log");
  EXPECT_EQ(status, 128 + SIGINT) << first;
  EXPECT_NE(first.find("received signal 2"), std::string::npos) << first;
  const auto saved = CheckpointFolder(dir / "out" / "checkpoints").latest_valid();
  ASSERT_TRUE(saved) << first;
  EXPECT_GE(saved->step, 3);

  args.back() = "--training.steps=" + std::to_string(saved->step + 2);
  const ProcessRun second = run_flashtrain(args);
  EXPECT_EQ(second.status, 0) << second.output;
  EXPECT_NE(second.output.find("resumed from"), std::string::npos) << second.output;
  EXPECT_TRUE(fs::exists(CheckpointFolder(dir / "out" / "checkpoints").path_for_step(saved->step + 2)));
}

// Whether signal `sig` is pending for process `pid`: sent, not yet delivered (its
// bit in SigPnd or ShdPnd of /proc/PID/status).
bool signal_pending(pid_t pid, int sig) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  const std::uint64_t bit = std::uint64_t{1} << (sig - 1);
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("SigPnd:", 0) != 0 && line.rfind("ShdPnd:", 0) != 0) continue;
    if (std::stoull(line.substr(7), nullptr, 16) & bit) return true;
  }
  return false;
}

// Sends `sig` and waits until the process has taken it (so that a second
// one is a second delivery, not merged with the first while pending).
void send_and_wait_for_delivery(pid_t pid, int sig) {
  ::kill(pid, sig);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (signal_pending(pid, sig) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
}

// The step of "received signal N at step S" in a log, or -1.
std::int64_t stop_step(const std::string& log) {
  const auto at = log.find(" at step ", log.find("received signal "));
  return at == std::string::npos ? -1 : std::stoll(log.substr(at + 9));
}

// Repeated stop signals while the run stops (a second Ctrl-C; `timeout -s INT`
// reaching the whole process group) and SIGHUP (a closed terminal) or SIGUSR1
// still save a checkpoint of the step the run stopped at; with
// checkpoint.interval = 0 that save is all the run leaves. The same command
// continues from it.
TEST(FlashtrainCli, RepeatedAndOtherStopSignalsStillSaveTheCheckpoint) {
  const std::vector<std::vector<int>> cases = {{SIGINT, SIGINT}, {SIGHUP}, {SIGUSR1, SIGTERM, SIGINT}};
  for (const std::vector<int>& signals : cases) {
    SCOPED_TRACE("first signal " + std::to_string(signals[0]) + " of " + std::to_string(signals.size()));
    ScratchDir dir;
    auto args = tiny_task_run(dir / "out");
    args.push_back("--training.steps=1000000");
    const pid_t pid = start(args, dir / "first.log");
    wait_for_steps(dir / "first.log", 3);
    for (int sig : signals) send_and_wait_for_delivery(pid, sig);
    const int status = wait_for(pid);
    const std::string first = read_file(dir / "first.log");
    EXPECT_NE(first.find("received signal " + std::to_string(signals[0]) + " at step "), std::string::npos) << first;
    // 128 + the first signal; or, where the run finished its save and put the
    // default actions back before a later signal arrived, that signal's end.
    EXPECT_TRUE(std::any_of(signals.begin(), signals.end(), [&](int sig) { return status == 128 + sig; }))
        << status << "\n" << first;
    const std::int64_t step = stop_step(first);
    ASSERT_GE(step, 3) << first;
    const auto saved = CheckpointFolder(dir / "out" / "checkpoints").latest_valid();
    ASSERT_TRUE(saved) << "no checkpoint:\n" << first;
    EXPECT_EQ(saved->step, step) << first;

    args.back() = "--training.steps=" + std::to_string(step + 2);
    const ProcessRun second = run_flashtrain(args);
    EXPECT_EQ(second.status, 0) << second.output;
    EXPECT_NE(second.output.find("resumed from"), std::string::npos) << second.output;
    EXPECT_TRUE(fs::exists(CheckpointFolder(dir / "out" / "checkpoints").path_for_step(step + 2)));
  }
}

// Waits up to a minute for `words` in the file `log`.
bool appears_in(const fs::path& log, const std::string& words) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (read_file(log).find(words) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// With stdout a file, the banner is there while the run goes on (a buffer
// would hold it until it filled); a second run on the same folder stops at
// once naming the first one's pid, and leaves the first one's files alone.
// The disk fills while a checkpoint is written (a file-size limit fails the
// write as a full disk does): the run stops with an error naming the file and
// the cause, the previous checkpoint stays complete and valid, nothing of the
// failed save passes for a checkpoint, and the same command continues from the
// previous one once there is room.
TEST(FlashtrainCli, AFailedCheckpointWriteKeepsThePreviousOneAndTheRunResumes) {
  ScratchDir dir;
  auto args = tiny_task_run(dir / "out");
  args.insert(args.end(), {"--model.dim=64", "--model.head_dim=32", "--training.steps=4"});
  const ProcessRun first = run_flashtrain(args);
  ASSERT_EQ(first.status, 0) << first.output;
  const CheckpointFolder folder(dir / "out" / "checkpoints");
  const fs::path step4 = folder.path_for_step(4);
  const auto optimizer_bytes = fs::file_size(step4 / "optimizer.safetensors");
  ASSERT_GT(optimizer_bytes, 64u * 1024) << "the limit below must cut the checkpoint, not the logs";

  args.back() = "--training.steps=8";
  const ProcessRun full = run_flashtrain(args, {}, optimizer_bytes / 2);
  EXPECT_EQ(full.status, 1) << full.output;
  EXPECT_NE(full.output.find("File too large"), std::string::npos) << full.output;
  EXPECT_NE(full.output.find("step_00000008"), std::string::npos) << full.output;
  EXPECT_EQ(full.output.find("terminate called"), std::string::npos) << full.output;
  const auto latest = folder.latest_valid();
  ASSERT_TRUE(latest) << full.output;
  EXPECT_EQ(latest->step, 4);
  EXPECT_FALSE(fs::exists(folder.path_for_step(8))) << full.output;

  const ProcessRun resumed = run_flashtrain(args);
  EXPECT_EQ(resumed.status, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resumed from " + step4.string()), std::string::npos) << resumed.output;
  EXPECT_TRUE(fs::exists(folder.path_for_step(8) / "manifest.json")) << resumed.output;
}

TEST(FlashtrainCli, ALogFileShowsTheRunAsItGoesAndTheFolderHasOneRun) {
  ScratchDir dir;
  auto args = tiny_task_run(dir / "out");
  args.push_back("--training.steps=1000000");
  args.push_back("--metrics.log_every=1000000");  // the banner and step 1 only
  const pid_t pid = start(args, dir / "first.log");
  const bool banner = appears_in(dir / "first.log", "starting from scratch");
  const ProcessRun second = run_flashtrain(args);
  ::kill(pid, SIGKILL);
  wait_for(pid);
  EXPECT_TRUE(banner) << read_file(dir / "first.log");
  expect_clean_error(second, 1, "another flashtrain run (pid " + std::to_string(pid) + ") is training in ");
  EXPECT_EQ(second.output.find("starting from scratch"), std::string::npos) << second.output;
}

// eval of a task checkpoint prints the answers by sequence length after its
// summary: validation lengths 8..16, validation.steps x 4 answers in all.
TEST(FlashtrainCli, EvalOfATaskPrintsTheAnswersByLength) {
  ScratchDir dir;
  auto args = tiny_task_run(dir / "out");
  args.push_back("--model.structure=plain");
  args.push_back("--training.steps=2");
  args.push_back("--validation.steps=2");
  const ProcessRun trained = run_flashtrain(args);
  ASSERT_EQ(trained.status, 0) << trained.output;
  args.insert(args.begin(), "eval");
  const ProcessRun evaluated = run_flashtrain(args);
  ASSERT_EQ(evaluated.status, 0) << evaluated.output;
  const std::string prefix = "answers by length [length, correct, total]: ";
  const std::size_t at = evaluated.output.find(prefix);
  ASSERT_NE(at, std::string::npos) << evaluated.output;
  const std::size_t start = at + prefix.size();
  const nlohmann::json rows =
      nlohmann::json::parse(evaluated.output.substr(start, evaluated.output.find('\n', start) - start));
  std::int64_t answers = 0;
  for (const nlohmann::json& row : rows) {
    EXPECT_GE(row[0].get<std::int64_t>(), 8) << row;
    EXPECT_LE(row[0].get<std::int64_t>(), 16) << row;
    EXPECT_LE(row[1].get<std::int64_t>(), row[2].get<std::int64_t>()) << row;
    answers += row[2].get<std::int64_t>();
  }
  EXPECT_EQ(answers, 2 * 4);
}

// What a newcomer gets wrong first, answered with what to do: a second export
// of one checkpoint, an export or a missing folder given as a checkpoint, and
// `help SUBCOMMAND`.
TEST(FlashtrainCli, CheckpointMistakesSayWhatToDo) {
  ScratchDir dir;
  auto args = tiny_task_run(dir / "out");
  args.push_back("--training.steps=2");
  ASSERT_EQ(run_flashtrain(args).status, 0);
  auto with = [&](const char* subcommand, std::vector<std::string> extra) {
    std::vector<std::string> command = args;
    command.insert(command.begin(), subcommand);
    command.insert(command.end(), extra.begin(), extra.end());
    return run_flashtrain(command);
  };
  ASSERT_EQ(with("export", {}).status, 0);
  expect_clean_error(with("export", {}), 1, "pass --output DIR to export it elsewhere");
  EXPECT_EQ(with("export", {"--output=" + (dir / "second").string()}).status, 0);
  const fs::path exported = dir / "out" / "export" / "step_00000002";
  expect_clean_error(with("eval", {"--checkpoint=" + exported.string()}), 1, "is an export");
  expect_clean_error(with("eval", {"--checkpoint=" + (dir / "nowhere").string()}), 1, "nowhere does not exist");
  const ProcessRun help = run_flashtrain({"help", "eval"});
  EXPECT_EQ(help.status, 0) << help.output;
  EXPECT_NE(help.output.find("usage: flashtrain eval"), std::string::npos) << help.output;
}

}  // namespace
}  // namespace flashtrain::trainer

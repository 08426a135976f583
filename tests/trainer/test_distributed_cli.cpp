// flashtrain --nproc 2 on the CPU (the store backend: the real multi-process
// path without GPUs): the same losses as one process with the same global
// batch, a checkpoint continued on another world size with the same curve, a
// killed rank ending the run with its name, nproc against a launcher's world.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "flashtrain/trainer/checkpoint/checkpoint_folder.h"
#include "flashtrain_process.h"
#include "scratch_dir.h"

namespace flashtrain::trainer {
namespace {

namespace fs = std::filesystem;
using testing::ProcessRun;
using testing::read_file;
using testing::run_flashtrain;
using testing::ScratchDir;
using testing::start;
using testing::tiny_task_run;
using testing::wait_for;

// A tiny task run with a global batch of 8 (4 per micro-batch) on the CPU,
// validating 2 global batches every 3 steps. A constant learning rate after
// warm-up, so that a run cut short follows the same schedule as a longer one.
std::vector<std::string> run_args(const fs::path& folder, int steps, int nproc) {
  std::vector<std::string> args = tiny_task_run(folder);
  args.insert(args.end(), {"--training.steps=" + std::to_string(steps), "--training.global_batch_size=8",
                           "--training.device=cpu", "--parallelism.timeout_seconds=60",
                           "--lr_scheduler.decay=constant", "--validation.every=3", "--validation.steps=2"});
  if (nproc > 1) args.insert(args.end(), {"--nproc", std::to_string(nproc)});
  return args;
}

// step -> loss of the "train" records of a metrics file.
std::map<int, double> train_losses(const fs::path& metrics) {
  std::map<int, double> losses;
  std::ifstream in(metrics);
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json record = nlohmann::json::parse(line);
    if (record.value("kind", "") == "train") losses[record.at("step").get<int>()] = record.at("loss").get<double>();
  }
  return losses;
}

// step -> the "val" record of a metrics file.
std::map<int, nlohmann::json> val_records(const fs::path& metrics) {
  std::map<int, nlohmann::json> records;
  std::ifstream in(metrics);
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json record = nlohmann::json::parse(line);
    if (record.value("kind", "") == "val") records[record.at("step").get<int>()] = record;
  }
  return records;
}

void expect_same_losses(const std::map<int, double>& expected, const std::map<int, double>& actual, int first,
                        int last) {
  for (int step = first; step <= last; ++step) {
    ASSERT_TRUE(expected.count(step) && actual.count(step)) << "step " << step;
    // Averaging over ranks sums in another order than accumulating micro-steps.
    EXPECT_NEAR(actual.at(step), expected.at(step), 1e-5 * std::abs(expected.at(step))) << "step " << step;
  }
}

// Validation covers the same rows on 1 and 2 ranks: at steps 3 and 6, 2 global
// batches of 8 sequences with one scored answer each, split over micro-batches
// in one process and over ranks in two.
void expect_same_validation(const fs::path& one, const fs::path& two, double loss_tolerance,
                            double accuracy_tolerance) {
  const auto val_one = val_records(one);
  const auto val_two = val_records(two);
  ASSERT_EQ(val_one.size(), 2u);
  ASSERT_EQ(val_two.size(), 2u);
  for (int step : {3, 6}) {
    ASSERT_TRUE(val_one.count(step) && val_two.count(step)) << "step " << step;
    EXPECT_EQ(val_one.at(step).at("scored_tokens").get<int>(), 16) << val_one.at(step).dump();
    EXPECT_EQ(val_two.at(step).at("scored_tokens").get<int>(), 16) << val_two.at(step).dump();
    const double loss = val_one.at(step).at("loss").get<double>();
    EXPECT_NEAR(val_two.at(step).at("loss").get<double>(), loss, loss_tolerance * loss) << "step " << step;
    EXPECT_NEAR(val_two.at(step).at("accuracy").get<double>(), val_one.at(step).at("accuracy").get<double>(),
                accuracy_tolerance)
        << "step " << step;
  }
}

TEST(DistributedCli, TwoRanksMatchOneProcessWithTheSameGlobalBatch) {
  ScratchDir dir;
  const ProcessRun one = run_flashtrain(run_args(dir / "one", 6, 1));
  ASSERT_EQ(one.status, 0) << one.output;
  EXPECT_NE(one.output.find("4 x 8 tokens x 2 accumulation = "), std::string::npos) << one.output;
  const ProcessRun two = run_flashtrain(run_args(dir / "two", 6, 2));
  ASSERT_EQ(two.status, 0) << two.output;
  EXPECT_NE(two.output.find("starting 2 ranks on this machine"), std::string::npos) << two.output;
  EXPECT_NE(two.output.find("4 x 8 tokens x 1 accumulation x 2 ranks = "), std::string::npos) << two.output;
  EXPECT_NE(two.output.find("data parallel: 2 ranks (store)"), std::string::npos) << two.output;
  // Only rank 0 logs.
  EXPECT_EQ(two.output.find("step 6/6"), two.output.rfind("step 6/6")) << two.output;
  const auto expected = train_losses(dir / "one" / "metrics.jsonl");
  const auto actual = train_losses(dir / "two" / "metrics.jsonl");
  EXPECT_EQ(actual.size(), 6u);
  expect_same_losses(expected, actual, 1, 6);
  expect_same_validation(dir / "one" / "metrics.jsonl", dir / "two" / "metrics.jsonl", 1e-5, 0.0);
  // The ranks' data differ (disjoint slices): step 1's loss is that of 8
  // sequences, not of rank 0's 4 twice; a 2-rank run without accumulation
  // over a global batch of 4 sees other data.
  const ProcessRun half = run_flashtrain([&] {
    auto args = run_args(dir / "half", 1, 1);
    args.push_back("--training.global_batch_size=4");
    return args;
  }());
  ASSERT_EQ(half.status, 0) << half.output;
  EXPECT_NE(train_losses(dir / "half" / "metrics.jsonl").at(1), expected.at(1));
}

TEST(DistributedCli, CheckpointContinuesOnAnotherWorldSize) {
  ScratchDir dir;
  const ProcessRun reference = run_flashtrain(run_args(dir / "reference", 6, 1));
  ASSERT_EQ(reference.status, 0) << reference.output;
  const ProcessRun first = run_flashtrain(run_args(dir / "run", 3, 2));  // saves step 3
  ASSERT_EQ(first.status, 0) << first.output;
  const ProcessRun same = run_flashtrain(run_args(dir / "run", 4, 2));  // the same world: step 4
  ASSERT_EQ(same.status, 0) << same.output;
  EXPECT_NE(same.output.find("resumed from"), std::string::npos) << same.output;
  EXPECT_EQ(same.output.find("rank(s), this run has"), std::string::npos) << same.output;
  const ProcessRun second = run_flashtrain(run_args(dir / "run", 6, 1));  // another world: steps 5, 6
  ASSERT_EQ(second.status, 0) << second.output;
  EXPECT_NE(second.output.find("written by 2 rank(s), this run has 1"), std::string::npos) << second.output;
  EXPECT_NE(second.output.find("resumed from"), std::string::npos) << second.output;
  expect_same_losses(train_losses(dir / "reference" / "metrics.jsonl"), train_losses(dir / "run" / "metrics.jsonl"),
                     1, 6);
}

TEST(DistributedCli, SigintToTheLauncherStopsEveryRankAtOneStep) {
  ScratchDir dir;
  auto args = run_args(dir / "out", 1000000, 2);
  args.push_back("--checkpoint.interval=0");
  const pid_t launcher = start(args, dir / "log");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (read_file(dir / "log").find("3/1000000 | loss") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ::kill(launcher, SIGINT);
  const int status = wait_for(launcher);
  const std::string log = read_file(dir / "log");
  EXPECT_EQ(status, 128 + SIGINT) << log;
  EXPECT_NE(log.find("forwarding it to the 2 running ranks"), std::string::npos) << log;
  EXPECT_EQ(log.find("failed"), std::string::npos) << log;  // both ranks stopped on it, agreeing on the step
  const auto saved = CheckpointFolder(dir / "out" / "checkpoints").latest_valid();
  ASSERT_TRUE(saved) << log;
  EXPECT_GE(saved->step, 3);
  // The same command continues (here to two more steps, on one rank).
  auto again = run_args(dir / "out", int(saved->step) + 2, 1);
  const ProcessRun second = run_flashtrain(again);
  EXPECT_EQ(second.status, 0) << second.output;
  EXPECT_NE(second.output.find("resumed from"), std::string::npos) << second.output;
}

// The pid of the child of `parent` whose environment has RANK=<rank>.
pid_t rank_pid(pid_t parent, int rank) {
  std::ifstream children("/proc/" + std::to_string(parent) + "/task/" + std::to_string(parent) + "/children");
  for (pid_t pid; children >> pid;) {
    std::ifstream environ("/proc/" + std::to_string(pid) + "/environ");
    for (std::string entry; std::getline(environ, entry, '\0');)
      if (entry == "RANK=" + std::to_string(rank)) return pid;
  }
  return -1;
}

// Either rank killed: the launcher names it, the survivor says which rank it
// lost (rank 0 also serves the rendezvous store), and nobody prints a stack
// trace or torch's store warnings.
class KilledRank : public ::testing::TestWithParam<int> {};

TEST_P(KilledRank, EndsTheRunNamingIt) {
  const int killed = GetParam();
  ScratchDir dir;
  const pid_t launcher = start(run_args(dir / "out", 1000000, 2), dir / "log");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (read_file(dir / "log").find("3/1000000 | loss") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_NE(read_file(dir / "log").find("3/1000000 | loss"), std::string::npos) << read_file(dir / "log");
  const pid_t victim = rank_pid(launcher, killed);
  ASSERT_GT(victim, 0) << read_file(dir / "log");
  const auto killed_at = std::chrono::steady_clock::now();
  ::kill(victim, SIGKILL);
  const int status = wait_for(launcher);
  const auto took = std::chrono::steady_clock::now() - killed_at;
  const std::string log = read_file(dir / "log");
  const std::string name = "rank " + std::to_string(killed);
  EXPECT_EQ(status, 128 + SIGKILL) << log;
  EXPECT_LT(took, std::chrono::seconds(15)) << log;
  EXPECT_NE(log.find(name + " (pid " + std::to_string(victim) + ") was killed by signal 9"), std::string::npos) << log;
  EXPECT_NE(log.find("failed: " + name), std::string::npos) << log;
  EXPECT_EQ(log.find("terminate called"), std::string::npos) << log;
  EXPECT_EQ(log.find("frame #"), std::string::npos) << log;
  EXPECT_EQ(log.find("TCPStore.cpp"), std::string::npos) << log;
  if (killed == 0) {  // the survivor's own line names rank 0
    EXPECT_NE(log.find("rank 1: "), std::string::npos) << log;
    EXPECT_NE(log.find("rank 0 (pid " + std::to_string(victim)), std::string::npos) << log;
  }
}

INSTANTIATE_TEST_SUITE_P(DistributedCli, KilledRank, ::testing::Values(0, 1),
                         [](const ::testing::TestParamInfo<int>& info) { return "rank" + std::to_string(info.param); });

TEST(DistributedCli, NprocAgainstALaunchersWorldIsAConfigError) {
  ScratchDir dir;
  const ProcessRun r = run_flashtrain(
      run_args(dir / "out", 2, 2),
      {{"RANK", "0"}, {"WORLD_SIZE", "3"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "1"}});
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("parallelism.nproc = 2, but torchrun started 3 rank(s)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[rank 0]"), std::string::npos) << r.output;
}

// The wavefront writes each block's gradients on its own stream, which the
// reducer does not wait for: refused before the first step, at the key (raised
// after torch started, in the trainer: still a config error, exit status 2).
TEST(DistributedCli, TheWavefrontIsRefusedDataParallel) {
  ScratchDir dir;
  auto args = run_args(dir / "out", 2, 2);
  args.push_back("--model.wavefront_chunks=4");
  const ProcessRun r = run_flashtrain(args);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("model.wavefront_chunks = 4 does not run data parallel yet"), std::string::npos)
      << r.output;
}

TEST(DistributedCli, OneRankUnderALauncherNeedsNoStore) {
  ScratchDir dir;
  // WORLD_SIZE=1 from torchrun: a single process; MASTER_PORT 1 would fail if contacted.
  const ProcessRun r = run_flashtrain(run_args(dir / "out", 2, 1), {{"RANK", "0"}, {"WORLD_SIZE", "1"},
                                                                    {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "1"}});
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.find("rendezvous"), std::string::npos) << r.output;
}

// GPUs this process may use, without CUDA: CUDA_VISIBLE_DEVICES when set,
// else the /dev/nvidiaN device files.
int visible_gpus() {
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES")) {
    const std::string list = visible;
    if (list.empty()) return 0;
    return int(std::count(list.begin(), list.end(), ',')) + 1;
  }
  int count = 0;
  while (fs::exists("/dev/nvidia" + std::to_string(count))) ++count;
  return count;
}

TEST(DistributedCli, TwoGpuRanksOverNcclMatchOneGpu) {
  if (visible_gpus() < 2) GTEST_SKIP() << "needs 2 GPUs (found " << visible_gpus() << ")";
  ScratchDir dir;
  auto args_for = [&](const std::string& name, int nproc) {
    auto args = run_args(dir / name, 6, nproc);
    args.push_back("--training.device=cuda");  // after run_args' cpu: the last one wins
    return args;
  };
  const ProcessRun one = run_flashtrain(args_for("one", 1), {{"CUDA_VISIBLE_DEVICES", "0"}});
  ASSERT_EQ(one.status, 0) << one.output;
  const ProcessRun two = run_flashtrain(args_for("two", 2));
  ASSERT_EQ(two.status, 0) << two.output;
  EXPECT_NE(two.output.find("data parallel: 2 ranks (nccl)"), std::string::npos) << two.output;
  const auto expected = train_losses(dir / "one" / "metrics.jsonl");
  const auto actual = train_losses(dir / "two" / "metrics.jsonl");
  for (int step = 1; step <= 6; ++step) {
    ASSERT_TRUE(expected.count(step) && actual.count(step)) << "step " << step << "\n" << two.output;
    EXPECT_NEAR(actual.at(step), expected.at(step), 1e-3 * std::abs(expected.at(step))) << "step " << step;
  }
  // The sums over ranks go through NCCL here. fp32, but the GPU's kernels sum in
  // another order than one process: a prediction on a near tie may flip (1 of 16).
  expect_same_validation(dir / "one" / "metrics.jsonl", dir / "two" / "metrics.jsonl", 1e-3, 1.0 / 16);
}

// Data parallel in a CUDA graph: the all-reduce inside the step's graph and
// between two graphs take the same steps bit for bit (a sum of two ranks is
// the same in any order), the eager loop the same up to its other AdamW; with
// two accumulated micro-batches per rank, steps queued between log steps
// (log_every 3) and a validation.
TEST(DistributedCli, TwoGpuRanksInACudaGraphMatchEagerRanks) {
  if (visible_gpus() < 2) GTEST_SKIP() << "needs 2 GPUs (found " << visible_gpus() << ")";
  ScratchDir dir;
  auto args_for = [&](const std::string& name, std::vector<std::string> extra) {
    auto args = run_args(dir / name, 8, 2);
    args.insert(args.end(), {"--training.device=cuda", "--metrics.log_every=3", "--training.global_batch_size=16"});
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  const ProcessRun eager = run_flashtrain(args_for("eager", {"--training.cuda_graph=off"}));
  ASSERT_EQ(eager.status, 0) << eager.output;
  const ProcessRun inside = run_flashtrain(args_for("inside", {"--training.cuda_graph=on"}));
  ASSERT_EQ(inside.status, 0) << inside.output;
  EXPECT_NE(inside.output.find("the gradient all-reduce inside the graph"), std::string::npos) << inside.output;
  EXPECT_NE(inside.output.find("4 x 8 tokens x 2 accumulation x 2 ranks"), std::string::npos) << inside.output;
  const ProcessRun between = run_flashtrain(
      args_for("between", {"--training.cuda_graph=on", "--parallelism.allreduce_in_graph=false"}));
  ASSERT_EQ(between.status, 0) << between.output;
  EXPECT_NE(between.output.find("between a graph of forward+backward and one of the update"), std::string::npos)
      << between.output;

  const auto expected = train_losses(dir / "eager" / "metrics.jsonl");
  const auto in_graph = train_losses(dir / "inside" / "metrics.jsonl");
  EXPECT_EQ(in_graph, train_losses(dir / "between" / "metrics.jsonl"));
  ASSERT_EQ(in_graph.size(), 4u) << "steps 1, 3, 6, 8\n" << inside.output;
  for (const auto& [step, loss] : in_graph) {
    ASSERT_TRUE(expected.count(step)) << "step " << step;
    EXPECT_NEAR(loss, expected.at(step), 1e-4 * std::abs(expected.at(step))) << "step " << step;
  }
  EXPECT_EQ(val_records(dir / "inside" / "metrics.jsonl").size(), 3u) << "steps 3, 6, 8";
}

// Two GPU ranks started by hand (no launcher to stop the other), their graphed
// steps queued between log steps: when rank 1 dies, rank 0 must notice while
// it waits for the queued steps (their all-reduces never complete) and exit
// naming it, without hanging in a teardown that waits for the stuck device.
TEST(DistributedCli, AGpuRankWithQueuedGraphStepsEndsWhenItsPeerDies) {
  if (visible_gpus() < 2) GTEST_SKIP() << "needs 2 GPUs (found " << visible_gpus() << ")";
  ScratchDir dir;
  const std::string port = std::to_string(20000 + ::getpid() % 20000);
  std::vector<pid_t> ranks;
  for (const char* rank : {"0", "1"}) {
    auto args = run_args(dir / "out", 1000000, 1);
    args.insert(args.end(), {"--training.device=cuda", "--training.cuda_graph=on", "--metrics.log_every=50",
                             "--validation.every=0", "--checkpoint.enable=false"});
    ranks.push_back(start(args, dir / (std::string("rank") + rank + ".log"),
                          {{"RANK", rank}, {"LOCAL_RANK", rank}, {"WORLD_SIZE", "2"}, {"LOCAL_WORLD_SIZE", "2"},
                           {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", port.c_str()}}));
  }
  const auto log0 = [&] { return read_file(dir / "rank0.log"); };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (log0().find("200/1000000 | loss") == std::string::npos && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_NE(log0().find("200/1000000 | loss"), std::string::npos) << log0();
  ::kill(ranks[1], SIGKILL);
  wait_for(ranks[1]);
  const auto killed_at = std::chrono::steady_clock::now();
  // Bounded: a rank 0 that hangs is killed after 30 s and the test fails.
  std::thread reaper([&] {
    while (std::chrono::steady_clock::now() - killed_at < std::chrono::seconds(30)) {
      if (::kill(ranks[0], 0) != 0) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ::kill(ranks[0], SIGKILL);
  });
  const int status = wait_for(ranks[0]);
  reaper.join();
  EXPECT_EQ(status, 1) << log0();
  EXPECT_LT(std::chrono::steady_clock::now() - killed_at, std::chrono::seconds(15)) << log0();
  EXPECT_NE(log0().find("rank 1 (pid " + std::to_string(ranks[1])), std::string::npos) << log0();
}

}  // namespace
}  // namespace flashtrain::trainer

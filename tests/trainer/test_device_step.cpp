// The step as device work (device_step.h): the same training as the eager
// step, a skipped update on a non-finite loss, bit-identical replays of its
// CUDA graph, steps queued between read-backs that report what step-by-step
// runs report, and checkpoints that resume exactly across
// training.cuda_graph; training.target_loss.
#include <gtest/gtest.h>

#include <torch/cuda.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "flashtrain/config/config_error.h"
#include "fake_communicator.h"
#include "flashtrain/data/tasks.h"
#include "flashtrain/distributed/reducer.h"
#include "flashtrain/trainer/step/device_step.h"
#include "flashtrain/trainer/step/optimizer.h"
#include "flashtrain/trainer/run/trainer.h"
#include "tiny_run.h"

namespace flashtrain::trainer {
namespace {

using testing::TinyRun;

constexpr int kVocab = 16;

models::LanguageModel tiny_model(torch::Device device, flashrnn::Backend backend) {
  models::LanguageModelOptions o;
  o.vocab_size = kVocab;
  o.model.dim = 32;
  models::set_layer_kinds(o.model, {models::BlockKind::kLstm, models::BlockKind::kLstm});
  o.model.n_heads = 2;
  o.model.backend = std::string(flashrnn::to_string(backend));
  torch::manual_seed(3);
  models::LanguageModel model(o);
  model->to(device);
  return model;
}

config::OptimizerConfig optimizer_config() {
  config::OptimizerConfig o;
  o.lr = 3e-3;
  o.weight_decay = 0.1;
  return o;
}

// `count` batches of 4 x 12 tokens; the first position of each row is not scored.
std::vector<Batch> batches(int count, torch::Device device) {
  torch::manual_seed(11);
  std::vector<Batch> out;
  for (int i = 0; i < count; ++i) {
    Batch b;
    b.inputs = torch::randint(kVocab, {4, 12}, torch::kLong).to(device);
    torch::Tensor targets = torch::randint(kVocab, {4, 12}, torch::kLong);
    targets.select(1, 0).fill_(data::kIgnoreTarget);
    b.targets = targets.to(device);
    b.scored_tokens = 4 * 11;
    out.push_back(b);
  }
  return out;
}

// fp32 steps clipped at `grad_clip`, captured or eager.
DeviceStepOptions step_options(double grad_clip, bool graph) {
  DeviceStepOptions options;
  options.grad_clip = grad_clip;
  options.graph = graph;
  return options;
}

DeviceStepOptions data_parallel_options(distributed::Reducer* reducer, bool allreduce_in_graph) {
  DeviceStepOptions options = step_options(0.5, false);
  options.reducer = reducer;
  options.allreduce_in_graph = allreduce_in_graph;
  return options;
}

struct Trajectory {
  std::vector<double> losses, norms;
  std::vector<torch::Tensor> parameters;
  std::vector<std::string> notices;  // the step's fallbacks
  std::int64_t micro_batch_parts = 1;
  std::int64_t graph_pool_bytes = 0;
};

Trajectory device_steps(models::LanguageModel model, const std::vector<Batch>& data, DeviceStepOptions options) {
  auto optimizer = make_adamw(*model, optimizer_config());
  Trajectory t;
  options.notice = [&t](const std::string& line) { t.notices.push_back(line); };
  DeviceStep step(*model, *optimizer, options);
  for (const Batch& batch : data) {
    const DeviceStepResult r = step.run({batch}, batch.scored_tokens, 3e-3);
    t.losses.push_back(r.loss_sum / double(batch.scored_tokens));
    t.norms.push_back(r.grad_norm);
  }
  EXPECT_EQ(step.captured(), options.graph && options.inject_out_of_memory.captures == 0 &&
                                 int(data.size()) > DeviceStep::kEagerSteps);
  for (const torch::Tensor& p : model->parameters()) t.parameters.push_back(p.detach().cpu().clone());
  t.micro_batch_parts = step.micro_batch_parts();
  t.graph_pool_bytes = step.graph_pool_bytes();
  return t;
}

DeviceStepOptions with_injected_out_of_memory(DeviceStepOptions options, int captures, int steps) {
  options.inject_out_of_memory.captures = captures;
  options.inject_out_of_memory.steps = steps;
  return options;
}

// The eager loop's step: autograd, clip_grad_norm, torch::optim::AdamW.
Trajectory eager_steps(models::LanguageModel model, const std::vector<Batch>& data, double grad_clip) {
  auto optimizer = make_adamw(*model, optimizer_config());
  const auto sum =
      torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum).ignore_index(data::kIgnoreTarget);
  Trajectory t;
  for (const Batch& batch : data) {
    set_learning_rate(*optimizer, 3e-3);
    optimizer->zero_grad(true);
    const torch::Tensor logits = model->forward(batch.inputs);
    const torch::Tensor loss =
        torch::nn::functional::cross_entropy(logits.reshape({-1, kVocab}), batch.targets.reshape(-1), sum);
    (loss / double(batch.scored_tokens)).backward();
    t.norms.push_back(clip_grad_norm(model->parameters(), grad_clip));
    optimizer->step();
    t.losses.push_back(loss.item<double>() / double(batch.scored_tokens));
  }
  for (const torch::Tensor& p : model->parameters()) t.parameters.push_back(p.detach().cpu().clone());
  return t;
}

TEST(DeviceStep, TrainsLikeTheEagerStep) {
  const torch::Device cpu(torch::kCPU);
  const auto data = batches(6, cpu);
  // A clip low enough to act on every step.
  const Trajectory fused = device_steps(tiny_model(cpu, flashrnn::Backend::kVanilla), data, step_options(0.05, false));
  const Trajectory eager = eager_steps(tiny_model(cpu, flashrnn::Backend::kVanilla), data, 0.05);
  for (std::size_t i = 0; i < data.size(); ++i) {
    EXPECT_NEAR(fused.losses[i], eager.losses[i], 1e-5) << "step " << i + 1;
    EXPECT_NEAR(fused.norms[i], eager.norms[i], 1e-4 * eager.norms[i]) << "step " << i + 1;
    EXPECT_GT(eager.norms[i], 0.05) << "the clip must act for the test to mean something";
  }
  EXPECT_LT(eager.losses.back(), eager.losses.front()) << "the steps must train for the test to mean something";
  for (std::size_t i = 0; i < eager.parameters.size(); ++i)
    EXPECT_TRUE(torch::allclose(fused.parameters[i], eager.parameters[i], 1e-4, 1e-6)) << "parameter " << i;
}

TEST(DeviceStep, SkipsTheUpdateOnANonfiniteLossAndKeepsTheStepCount) {
  const torch::Device cpu(torch::kCPU);
  models::LanguageModel model = tiny_model(cpu, flashrnn::Backend::kVanilla);
  auto optimizer = make_adamw(*model, optimizer_config());
  DeviceStep step(*model, *optimizer, step_options(1.0, false));
  const auto data = batches(2, cpu);
  ASSERT_FALSE(step.run({data[0]}, 44, 1e-3).skipped);

  {
    // The head is tied to the embedding: one NaN row makes every logit's softmax NaN.
    torch::NoGradGuard no_grad;
    model->named_parameters()["embedding.weight"][0].fill_(std::nan(""));
  }
  std::vector<torch::Tensor> before;
  for (const torch::Tensor& p : model->parameters()) before.push_back(p.detach().clone());
  const DeviceStepResult r = step.run({data[1]}, 44, 1e-3);
  EXPECT_TRUE(r.skipped);
  EXPECT_FALSE(std::isfinite(r.loss_sum));
  const auto after = model->parameters();
  for (std::size_t i = 0; i < after.size(); ++i)
    EXPECT_TRUE(torch::allclose(after[i], before[i], 0, 0, /*equal_nan=*/true)) << "parameter " << i;

  step.sync_optimizer_state();
  for (const auto& [name, value] : adamw_state(*optimizer, *model)) {
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".step") == 0) {
      EXPECT_EQ(value.item<std::int64_t>(), 1) << name << ": the skipped update is not counted";
    }
  }
}

TEST(DeviceStep, QueuedStepsReportWhatStepByStepRunsReport) {
  const torch::Device cpu(torch::kCPU);
  const auto data = batches(4, cpu);
  const Trajectory one_by_one = device_steps(tiny_model(cpu, flashrnn::Backend::kVanilla), data, step_options(0.5, false));

  models::LanguageModel model = tiny_model(cpu, flashrnn::Backend::kVanilla);
  auto optimizer = make_adamw(*model, optimizer_config());
  DeviceStep step(*model, *optimizer, step_options(0.5, false));
  for (const Batch& batch : data) step.enqueue({batch}, batch.scored_tokens, 3e-3);
  EXPECT_EQ(step.queued(), data.size());
  EXPECT_THROW(step.sync_optimizer_state(), std::logic_error) << "the queued steps are not counted yet";
  const std::vector<DeviceStepResult> results = step.collect();
  EXPECT_EQ(step.queued(), 0u);
  ASSERT_EQ(results.size(), data.size());
  for (std::size_t i = 0; i < data.size(); ++i) {
    EXPECT_EQ(results[i].loss_sum / double(data[i].scored_tokens), one_by_one.losses[i]) << "step " << i + 1;
    EXPECT_EQ(results[i].grad_norm, one_by_one.norms[i]) << "step " << i + 1;
    EXPECT_FALSE(results[i].skipped);
  }
  step.sync_optimizer_state();
  for (const auto& [name, value] : adamw_state(*optimizer, *model)) {
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".step") == 0) {
      EXPECT_EQ(value.item<std::int64_t>(), 4) << name;
    }
  }
  EXPECT_TRUE(step.collect().empty());
}

// Data parallel: two ranks (threads over a fake communicator), each with its
// share of a step's batches (one micro-batch, or two accumulated), take the
// step one process takes with all of them as micro-batches, whether the
// all-reduces start from the backward hooks or after backward; and both ranks
// end with the same weights.
struct RanksCase {
  bool allreduce_in_graph;
  int micro_batches;  // per rank
};

class DeviceStepRanks : public ::testing::TestWithParam<RanksCase> {};

TEST_P(DeviceStepRanks, TakeTheStepOfTheirCombinedBatch) {
  const auto [allreduce_in_graph, micro] = GetParam();
  const torch::Device cpu(torch::kCPU);
  constexpr int kSteps = 3;
  const int per_step = 2 * micro;  // batches of a step, rank 0's first
  auto data = batches(kSteps * per_step, cpu);
  // Rank 1's batches score fewer tokens: each rank must divide by the count
  // of both, not by its own.
  const auto rank_of = [&](int i) { return (i % per_step) / micro; };
  for (int i = 0; i < int(data.size()); ++i)
    if (rank_of(i) == 1) {
      data[i].targets = data[i].targets.clone();
      data[i].targets.select(1, 1).fill_(data::kIgnoreTarget);
      data[i].scored_tokens = 4 * 10;
    }
  const auto step_batches = [&](int k, int first, int count) {
    std::vector<Batch> out(data.begin() + k * per_step + first, data.begin() + k * per_step + first + count);
    std::int64_t scored = 0;
    for (const Batch& b : out) scored += b.scored_tokens;
    return std::make_pair(out, scored);
  };

  models::LanguageModel whole = tiny_model(cpu, flashrnn::Backend::kVanilla);
  auto whole_optimizer = make_adamw(*whole, optimizer_config());
  DeviceStep whole_step(*whole, *whole_optimizer, step_options(0.5, false));
  std::vector<DeviceStepResult> expected;
  for (int k = 0; k < kSteps; ++k) {
    const auto [all, scored] = step_batches(k, 0, per_step);
    expected.push_back(whole_step.run(all, scored, 3e-3));
  }

  auto world = distributed::FakeWorld::create(2);
  std::vector<models::LanguageModel> models;
  std::vector<std::vector<DeviceStepResult>> got(2);
  for (int rank = 0; rank < 2; ++rank) models.push_back(tiny_model(cpu, flashrnn::Backend::kVanilla));
  const auto run_rank = [&](int rank) {
    models::LanguageModelImpl& model = *models[rank];
    auto optimizer = make_adamw(model, optimizer_config());
    std::vector<std::string> names;
    for (const auto& item : model.named_parameters()) names.push_back(item.key());
    distributed::Reducer reducer(model.parameters(), names, world->communicator(rank));
    DeviceStep step(model, *optimizer, data_parallel_options(&reducer, allreduce_in_graph));
    for (int k = 0; k < kSteps; ++k) {
      const auto [mine, scored] = step_batches(k, rank * micro, micro);
      got[rank].push_back(step.run(mine, scored, 3e-3));
    }
  };
  std::thread other(run_rank, 1);
  run_rank(0);
  other.join();

  const double all_scored = double(micro * (4 * 11 + 4 * 10));
  for (int rank = 0; rank < 2; ++rank) {
    for (int k = 0; k < kSteps; ++k) {
      EXPECT_EQ(got[rank][k].scored_tokens, all_scored) << "rank " << rank << " step " << k + 1;
      // The ranks sum gradients in another order than one process: weights, and so
      // later losses, differ by rounding.
      EXPECT_NEAR(got[rank][k].loss_sum, expected[k].loss_sum, 1e-6 * expected[k].loss_sum) << "step " << k + 1;
      EXPECT_NEAR(got[rank][k].grad_norm, expected[k].grad_norm, 1e-5 * expected[k].grad_norm) << "step " << k + 1;
      EXPECT_FALSE(got[rank][k].skipped);
    }
  }
  EXPECT_GT(expected[0].grad_norm, 0.5) << "the clip must act for the test to mean something";
  const auto whole_params = whole->parameters();
  for (std::size_t i = 0; i < whole_params.size(); ++i) {
    EXPECT_TRUE(torch::equal(models[0]->parameters()[i], models[1]->parameters()[i])) << "parameter " << i;
    EXPECT_TRUE(torch::allclose(models[0]->parameters()[i], whole_params[i], 1e-4, 1e-6)) << "parameter " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(DeviceStep, DeviceStepRanks,
                         ::testing::Values(RanksCase{true, 1}, RanksCase{false, 1}, RanksCase{true, 2},
                                           RanksCase{false, 2}),
                         [](const ::testing::TestParamInfo<RanksCase>& info) {
                           return std::string(info.param.allreduce_in_graph ? "AllReduceDuringBackward"
                                                                            : "AllReduceAfterBackward") +
                                  (info.param.micro_batches > 1 ? "Accumulating" : "");
                         });

// Out of memory in an eager step: the step runs again with each micro-batch
// in two parts (the same update up to rounding), said once, and the parts
// stay; at one sequence a part there is nothing left to split.
TEST(DeviceStep, AStepThatRunsOutOfMemoryRunsAgainInParts) {
  const torch::Device cpu(torch::kCPU);
  const auto data = batches(4, cpu);
  const DeviceStepOptions plain = step_options(0.5, false);
  const Trajectory whole = device_steps(tiny_model(cpu, flashrnn::Backend::kVanilla), data, plain);
  const Trajectory parts =
      device_steps(tiny_model(cpu, flashrnn::Backend::kVanilla), data, with_injected_out_of_memory(plain, 0, 1));
  EXPECT_EQ(whole.micro_batch_parts, 1);
  EXPECT_EQ(parts.micro_batch_parts, 2);
  ASSERT_EQ(parts.notices.size(), 1u);
  EXPECT_NE(parts.notices[0].find("out of memory in the step with micro-batches of 4 sequences"), std::string::npos)
      << parts.notices[0];
  EXPECT_NE(parts.notices[0].find("training.local_batch_size"), std::string::npos) << parts.notices[0];
  for (std::size_t i = 0; i < data.size(); ++i) {
    EXPECT_NEAR(parts.losses[i], whole.losses[i], 1e-6) << "step " << i + 1;
    EXPECT_NEAR(parts.norms[i], whole.norms[i], 1e-5 * whole.norms[i]) << "step " << i + 1;
  }
  for (std::size_t i = 0; i < whole.parameters.size(); ++i)
    EXPECT_TRUE(torch::allclose(parts.parameters[i], whole.parameters[i], 1e-4, 1e-6)) << "parameter " << i;

  // 4 -> 2 x 2 -> 4 x 1 -> nothing left: an error that says so.
  models::LanguageModel model = tiny_model(cpu, flashrnn::Backend::kVanilla);
  auto optimizer = make_adamw(*model, optimizer_config());
  DeviceStep step(*model, *optimizer, with_injected_out_of_memory(plain, 0, 3));
  try {
    step.run({data[0]}, data[0].scored_tokens, 3e-3);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("even with one sequence at a time"), std::string::npos) << e.what();
  }
  EXPECT_EQ(step.micro_batch_parts(), 4);
}

TEST(DeviceStep, AGraphNeedsAGpu) {
  models::LanguageModel model = tiny_model(torch::Device(torch::kCPU), flashrnn::Backend::kVanilla);
  auto optimizer = make_adamw(*model, optimizer_config());
  EXPECT_THROW(DeviceStep(*model, *optimizer, step_options(1.0, true)), std::invalid_argument);
}

TEST(DeviceStep, CudaGraphOnWithoutAGpuIsAConfigError) {
  TinyRun run;
  std::ostringstream log;
  try {
    Trainer trainer(run.config({"--training.cuda_graph=on"}), log);
    FAIL() << "expected a config error";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("training.cuda_graph"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("CPU"), std::string::npos) << e.what();
  }
}

TEST(TargetLoss, StopsTheRunAfterValidatingAndSaving) {
  TinyRun run;
  std::ostringstream log;
  // ln 32 = 3.47 at the start: a target of 10 is met at the first progress line.
  Trainer trainer(run.config({"--training.steps=30", "--training.target_loss=10"}), log);
  const TrainResult result = trainer.run();
  EXPECT_EQ(result.status, TrainStatus::kReachedTarget) << log.str();
  EXPECT_EQ(result.step, 1);
  EXPECT_TRUE(result.last_validation.has_value());
  EXPECT_EQ(result.last_checkpoint.filename(), "step_00000001");
  std::ifstream metrics(run.dir() / "out" / "metrics.jsonl");
  bool event = false;
  for (std::string line; std::getline(metrics, line);) event |= line.find("\"target_loss\"") != std::string::npos;
  EXPECT_TRUE(event) << "metrics.jsonl has the target_loss event";

  std::ostringstream log2;
  Trainer unreachable(run.config({"--training.steps=6", "--training.target_loss=1e-9"}, "out2"), log2);
  EXPECT_EQ(unreachable.run().status, TrainStatus::kFinished);
}

// --- on a GPU ------------------------------------------------------------------------

bool have_gpu() { return torch::cuda::is_available(); }

TEST(DeviceStepGpu, GraphReplaysAreBitIdenticalToEagerSteps) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  const torch::Device gpu(torch::kCUDA, 0);
  const auto data = batches(8, gpu);
  for (const flashrnn::Backend backend : {flashrnn::Backend::kAuto, flashrnn::Backend::kVanilla}) {
    const Trajectory graph = device_steps(tiny_model(gpu, backend), data, step_options(0.5, true));
    const Trajectory eager = device_steps(tiny_model(gpu, backend), data, step_options(0.5, false));
    for (std::size_t i = 0; i < data.size(); ++i) {
      EXPECT_EQ(graph.losses[i], eager.losses[i]) << "step " << i + 1 << ", backend " << flashrnn::to_string(backend);
      EXPECT_EQ(graph.norms[i], eager.norms[i]) << "step " << i + 1;
    }
    for (std::size_t i = 0; i < eager.parameters.size(); ++i)
      EXPECT_TRUE(torch::equal(graph.parameters[i], eager.parameters[i])) << "parameter " << i;
  }
}

// A capture that runs out of memory: the steps run eagerly from then on
// (bit for bit the eager steps), said once; no graph, no pool.
TEST(DeviceStepGpu, ACaptureThatRunsOutOfMemoryFallsBackToEagerSteps) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  const torch::Device gpu(torch::kCUDA, 0);
  const auto data = batches(6, gpu);
  const Trajectory failed = device_steps(tiny_model(gpu, flashrnn::Backend::kAuto), data,
                                         with_injected_out_of_memory(step_options(0.5, true), 1, 0));
  const Trajectory eager = device_steps(tiny_model(gpu, flashrnn::Backend::kAuto), data, step_options(0.5, false));
  ASSERT_EQ(failed.notices.size(), 1u);
  EXPECT_NE(failed.notices[0].find("the capture ran out of memory; the steps run eagerly"), std::string::npos)
      << failed.notices[0];
  EXPECT_EQ(failed.graph_pool_bytes, 0);
  for (std::size_t i = 0; i < data.size(); ++i) EXPECT_EQ(failed.losses[i], eager.losses[i]) << "step " << i + 1;
  for (std::size_t i = 0; i < eager.parameters.size(); ++i)
    EXPECT_TRUE(torch::equal(failed.parameters[i], eager.parameters[i])) << "parameter " << i;
}

// The graph's pool is counted; a step that runs out of memory before the
// capture is captured in its parts.
TEST(DeviceStepGpu, TheGraphsPoolIsCountedAndPartsAreCaptured) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  const torch::Device gpu(torch::kCUDA, 0);
  const auto data = batches(6, gpu);
  const Trajectory graph = device_steps(tiny_model(gpu, flashrnn::Backend::kAuto), data, step_options(0.5, true));
  EXPECT_GT(graph.graph_pool_bytes, 0);
  EXPECT_TRUE(graph.notices.empty());
  const Trajectory parts = device_steps(tiny_model(gpu, flashrnn::Backend::kAuto), data,
                                        with_injected_out_of_memory(step_options(0.5, true), 0, 1));
  EXPECT_EQ(parts.micro_batch_parts, 2);
  EXPECT_GT(parts.graph_pool_bytes, 0);
  for (std::size_t i = 0; i < data.size(); ++i) EXPECT_NEAR(parts.losses[i], graph.losses[i], 1e-5) << i + 1;
}

struct RunOutcome {
  TrainResult result;
  std::vector<double> losses;
  std::vector<torch::Tensor> parameters;
  std::string log;
};

RunOutcome train(const config::ResolvedConfig& resolved, std::int64_t stop_at = 0) {
  std::ostringstream log;
  Trainer trainer(resolved, log);
  RunOutcome out;
  trainer.set_step_callback([&](const StepReport& r) {
    out.losses.push_back(r.loss);
    if (r.step == stop_at) trainer.request_stop();
  });
  out.result = trainer.run();
  for (const torch::Tensor& p : trainer.model().parameters()) out.parameters.push_back(p.detach().cpu().clone());
  out.log = log.str();
  return out;
}

TEST(DeviceStepGpu, ResumeIsExactWithGraphsAndAcrossTheSwitch) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  TinyRun run;
  const auto flags = [](const std::string& graph) {
    return std::vector<std::string>{"--training.device=cuda", "--training.steps=12", "--validation.every=0",
                                    "--model.backend=auto", "--training.cuda_graph=" + graph};
  };
  const RunOutcome whole = train(run.config(flags("on"), "whole"));
  ASSERT_EQ(whole.result.status, TrainStatus::kFinished) << whole.log;
  EXPECT_NE(whole.log.find("cuda graph: the step is captured"), std::string::npos) << whole.log;

  // Stopped after step 5 and resumed with graphs: the same run bit for bit.
  const RunOutcome first = train(run.config(flags("on"), "halves"), 5);
  ASSERT_EQ(first.result.status, TrainStatus::kStopped) << first.log;
  const RunOutcome second = train(run.config(flags("on"), "halves"));
  ASSERT_EQ(second.losses.size(), 7u) << second.log;
  for (std::size_t i = 0; i < 7; ++i) EXPECT_EQ(second.losses[i], whole.losses[5 + i]) << "step " << 6 + i;
  for (std::size_t i = 0; i < whole.parameters.size(); ++i)
    EXPECT_TRUE(torch::equal(second.parameters[i], whole.parameters[i])) << "parameter " << i;

  // Resumed eagerly: the same state (weights, moments, step counts, data), so
  // the same first loss and then the same losses up to the two AdamW
  // implementations' rounding.
  train(run.config(flags("on"), "switch"), 5);
  const RunOutcome eager = train(run.config(flags("off"), "switch"));
  ASSERT_EQ(eager.losses.size(), 7u) << eager.log;
  EXPECT_EQ(eager.losses[0], whole.losses[5]) << "step 6 starts from the same weights and batch";
  for (std::size_t i = 1; i < 7; ++i) EXPECT_NEAR(eager.losses[i], whole.losses[5 + i], 1e-4) << "step " << 6 + i;
}

// The train records of metrics.jsonl: step -> loss.
std::map<std::int64_t, double> logged_losses(const std::filesystem::path& folder) {
  std::map<std::int64_t, double> out;
  std::ifstream in(folder / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json record = nlohmann::json::parse(line);
    if (record.value("kind", "") == "train") out[record.at("step").get<std::int64_t>()] = record.at("loss").get<double>();
  }
  return out;
}

TEST(DeviceStepGpu, StepsQueuedBetweenLogStepsLogWhatStepByStepRunsLog) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  TinyRun run;
  const std::vector<std::string> flags{"--training.device=cuda", "--training.steps=23", "--validation.every=0",
                                       "--metrics.log_every=7", "--checkpoint.interval=10",
                                       "--model.backend=auto", "--training.cuda_graph=on"};
  // A step callback reads every report as its step ends; without one, the
  // numbers of the steps between log and checkpoint steps are read back in one go.
  const RunOutcome stepwise = train(run.config(flags, "stepwise"));
  ASSERT_EQ(stepwise.result.status, TrainStatus::kFinished) << stepwise.log;
  std::ostringstream log;
  Trainer trainer(run.config(flags, "queued"), log);
  ASSERT_EQ(trainer.run().status, TrainStatus::kFinished) << log.str();

  const auto expected = logged_losses(run.dir() / "stepwise"), got = logged_losses(run.dir() / "queued");
  ASSERT_EQ(got.size(), 5u) << "steps 1, 7, 14, 21, 23";
  EXPECT_EQ(got, expected);
  for (const auto& [step, loss] : got) EXPECT_EQ(loss, stepwise.losses[step - 1]) << "step " << step;
  std::size_t i = 0;
  for (const torch::Tensor& p : trainer.model().parameters())
    EXPECT_TRUE(torch::equal(p.detach().cpu(), stepwise.parameters[i++])) << "parameter " << i;
}

}  // namespace
}  // namespace flashtrain::trainer

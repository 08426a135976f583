// The training step as device work alone, so that a GPU runs it as one CUDA
// graph (training.cuda_graph).
//
// One step: the micro-batches are copied into buffers that never move; each is
// run forward and backward; the loss is summed, the global gradient norm is
// measured and clipped, and a fused AdamW step (ATen's _fused_adamw_) updates
// the parameters unless the loss or the norm is not finite. Every decision is a
// device tensor (the clip factor, the skip flag, the step count), so nothing
// waits for the host: enqueue() returns once the step is queued, and each
// step's report numbers stay on the device until collect() reads back all the
// queued ones at once. A caller that collects every few steps keeps the GPU
// busy while the host prepares the next batches. The first kEagerSteps steps
// run the same code eagerly (they warm up cuBLAS, the allocator, the op's
// kernels and the communicator); the next is captured once and every later
// step replays the capture. Without a graph the same code runs eagerly every
// step, which is how the tests compare replay against eager.
//
// Data parallel (a Reducer in the options): the ranks' scored-token counts,
// the gradients (the Reducer's buckets) and the loss sums are summed over the
// ranks on the device, so every rank takes the same update from the same
// numbers. The step is then four phases, collectives between computations:
//   sum the scored tokens | forward+backward | all-reduce gradients, loss | update
// With allreduce_in_graph one graph holds all four, and the buckets'
// all-reduces start from the backward hooks, overlapping backward. Without it
// the two computations are graphs of their own and the collectives run
// eagerly between the replays, after backward. The host waits for queued
// steps only under the communicator's watch (deadline, gone peers), in
// collect() and to stay at most kStepsInFlight steps ahead, so a dead rank ends
// the run with its name instead of a hang inside a replay.
//
// The optimizer's state stays in torch::optim::AdamW (its moments are the
// tensors updated here), so checkpoints are those of the eager loop; call
// sync_optimizer_state() before reading the state.
#pragma once

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/optim/adamw.h>
#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "flashtrain/models/language_model.h"
#include "flashtrain/trainer/batch_source.h"

namespace at::cuda {
struct CUDAGraph;
}

namespace flashtrain::distributed {
class Reducer;
}

namespace flashtrain::trainer {

struct DeviceStepOptions {
  bool bf16 = false;       // autocast to bf16 around the forward
  double grad_clip = 0.0;  // clip the global gradient norm to this; 0: measure only
  bool graph = false;      // capture and replay (CUDA only)
  // Data parallel: averages the gradients over the ranks (not owned). nullptr:
  // one process.
  distributed::Reducer* reducer = nullptr;
  // With a reducer and a graph: the all-reduces inside the one graph of the
  // step, or eagerly between a graph of forward+backward and one of the update.
  bool allreduce_in_graph = true;
};

struct DeviceStepResult {
  double loss_sum = 0.0;       // summed over the step's scored tokens (of every rank)
  double scored_tokens = 0.0;  // of every rank
  double grad_norm = 0.0;      // before clipping
  bool skipped = false;        // the loss or the norm was not finite: no update
};

class DeviceStep {
 public:
  // Steps the eager loop warms up with before the capture.
  static constexpr int kEagerSteps = 2;
  // Data parallel: steps queued on the device at most (enqueue() waits for
  // older ones, watched): enough to keep the device busy while the host
  // prepares the next.
  static constexpr std::size_t kStepsInFlight = 4;

  DeviceStep(models::LanguageModelImpl& model, torch::optim::AdamW& optimizer, DeviceStepOptions options);
  ~DeviceStep();
  DeviceStep(const DeviceStep&) = delete;
  DeviceStep& operator=(const DeviceStep&) = delete;

  // Queues one optimizer step over `micro_batches` (the same count and shapes
  // every step; `scored_tokens` in all of them) at learning rate `lr`. Each
  // micro-batch's summed loss is divided by the scored tokens of every rank
  // over the world size (the Reducer then averages). Does not wait for the
  // device.
  void enqueue(const std::vector<Batch>& micro_batches, std::int64_t scored_tokens, double lr);

  // Waits for the queued steps and returns their results in order: the only
  // host sync.
  std::vector<DeviceStepResult> collect();

  std::size_t queued() const { return queued_reports_.size(); }

  // enqueue() and collect() of one step.
  DeviceStepResult run(const std::vector<Batch>& micro_batches, std::int64_t scored_tokens, double lr);

  // The optimizer's per-parameter step counts as the device has them (after
  // collect(): a queued step is not counted yet).
  void sync_optimizer_state();

  bool captured() const { return !graphs_.empty(); }

 private:
  struct Group {
    std::vector<torch::Tensor> params, exp_avgs, exp_avg_sqs, steps;
    double weight_decay = 0.0;
  };

  void stage(const std::vector<Batch>& micro_batches, std::int64_t scored_tokens, double lr);
  // The phases of one step's device work (see the top).
  void sum_scored_over_ranks();
  void forward_backward();
  void reduce_over_ranks();
  void update();
  // Runs `phase` as the graph graphs_[index], capturing it on the first call.
  void replay(std::size_t index, const std::function<void()>& phase);
  // Waits, watched by the communicator, for the end of queued step `index`.
  void wait_for_step(std::size_t index);
  bool allreduce_between_graphs() const { return options_.reducer && !options_.allreduce_in_graph; }

  models::LanguageModelImpl& model_;
  torch::optim::AdamW& optimizer_;
  DeviceStepOptions options_;
  double beta1_ = 0.9, beta2_ = 0.999, eps_ = 1e-8;
  std::vector<Group> groups_;
  std::int64_t adam_steps_ = 0;  // updates taken, as the step tensors count them

  // Fixed buffers: the graph reads and writes these addresses.
  std::vector<torch::Tensor> inputs_, targets_;
  torch::Tensor lr_, scored_, normaliser_, loss_sum_, report_;
  std::vector<torch::Tensor> queued_reports_;  // a copy of report_ per queued step
  // Data parallel on a GPU: each queued step's end, and how many of them the
  // host has waited for.
  std::vector<at::cuda::CUDAEvent> queued_done_;
  std::size_t steps_waited_ = 0;
  int eager_steps_run_ = 0;
  // A capture needs a stream other than the default one; the warm-up steps and
  // the replays run on the same one.
  std::optional<c10::cuda::CUDAStream> stream_;
  // One graph of the whole step, or of forward+backward and of the update.
  std::vector<std::unique_ptr<at::cuda::CUDAGraph>> graphs_;
};

}  // namespace flashtrain::trainer

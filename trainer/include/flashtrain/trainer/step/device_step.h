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
// Memory. Before the capture the eager steps' cached blocks are given back
// (the graph's private pool cannot use them), so the captured step needs about
// what an eager one does, not both; graph_pool_bytes() is that pool, which the
// allocator's peak no longer sees once the replays run. Out of memory in one
// process: a capture that runs out ends, and the steps run eagerly from then
// on; an eager forward+backward that runs out runs again with each
// micro-batch split in two (gradient accumulation, the same update), down to
// single sequences. Each fallback is said once through options.notice. Data
// parallel, the ranks could not agree on a fallback mid-step: out of memory
// is an error naming the setting to change.
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
#include <string>
#include <vector>

#include "flashtrain/config/config.h"
#include "flashtrain/models/language_model.h"
#include "flashtrain/trainer/batch/batch_source.h"

namespace at::cuda {
struct CUDAGraph;
}

namespace flashtrain::distributed {
class Reducer;
}

namespace flashtrain::trainer {

// Why the training step cannot be a CUDA graph on `device` under `config`
// ("" where it can): training on the CPU, or debug.anomaly_detection.
std::string cuda_graph_blocker(const config::Config& config, torch::Device device);

// Whether the run's step is a graph: training.cuda_graph is not off and nothing blocks it.
bool step_is_graphed(const config::Config& config, torch::Device device);

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
  // Told each fallback (see the top), one line without a newline; may be empty.
  std::function<void(const std::string&)> notice;
  // For fault tests: the next `captures` captures and the next `steps` eager
  // forward+backward passes run out of memory (an OutOfMemoryError thrown
  // after the first micro-batch's forward).
  struct {
    int captures = 0;
    int steps = 0;
  } inject_out_of_memory;
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
  // The bytes the graphs' private pools hold (0 before the capture, or after
  // a capture ran out of memory).
  std::int64_t graph_pool_bytes() const { return graph_pool_bytes_; }
  // Each micro-batch runs as this many parts (1 unless a step ran out of memory).
  std::int64_t micro_batch_parts() const { return parts_; }

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
  // The whole step eagerly, forward+backward again with smaller parts where it
  // runs out of memory (one process).
  void run_eagerly();
  // Runs `phase` as the graph graphs_[index], capturing it on the first call.
  // False: the capture ran out of memory (one process); the graphs are gone,
  // nothing of `phase` ran, and the caller runs the step eagerly.
  bool replay(std::size_t index, const std::function<void()>& phase);
  // Splits every micro-batch's buffers into twice as many parts.
  void split_micro_batches();
  void throw_injected_out_of_memory(int& remaining, const char* where);
  // Waits, watched by the communicator, for the end of queued step `index`.
  void wait_for_step(std::size_t index);
  bool allreduce_between_graphs() const { return options_.reducer && !options_.allreduce_in_graph; }

  models::LanguageModelImpl& model_;
  torch::optim::AdamW& optimizer_;
  DeviceStepOptions options_;
  double beta1_ = 0.9, beta2_ = 0.999, eps_ = 1e-8;
  std::vector<Group> groups_;
  std::int64_t adam_steps_ = 0;  // updates taken, as the step tensors count them

  // Fixed buffers: the graph reads and writes these addresses. staged_*: one
  // per micro-batch; inputs_, targets_: the parts the passes run (views of
  // the staged ones, parts_ per micro-batch).
  std::vector<torch::Tensor> staged_inputs_, staged_targets_, inputs_, targets_;
  std::int64_t parts_ = 1;
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
  std::int64_t graph_pool_bytes_ = 0;
  bool graph_failed_ = false;  // a capture ran out of memory: eager from then on
  bool capturing_ = false;
};

}  // namespace flashtrain::trainer

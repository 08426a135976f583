// The training step as device work alone, so that a GPU runs it as one CUDA
// graph (training.cuda_graph).
//
// One step: the micro-batches are copied into buffers that never move; each is
// run forward and backward; the loss is summed, the global gradient norm is
// measured and clipped, and a fused AdamW step (ATen's _fused_adamw_) updates
// the parameters unless the loss or the norm is not finite. Every decision is a
// device tensor (the clip factor, the skip flag, the step count), so nothing
// waits for the host: enqueue() returns once the step is queued, and each
// step's three report numbers stay on the device until collect() reads back
// all the queued ones at once. A caller that collects every few steps keeps
// the GPU busy while the host prepares the next batches. The first kEagerSteps steps run the same code eagerly (they warm up
// cuBLAS, the allocator and the op's kernels); the next is captured once and
// every later step replays the capture. Without a graph the same code runs
// eagerly every step, which is how the tests compare replay against eager.
//
// The optimizer's state stays in torch::optim::AdamW (its moments are the
// tensors updated here), so checkpoints are those of the eager loop; call
// sync_optimizer_state() before reading the state.
#pragma once

#include <c10/cuda/CUDAStream.h>
#include <torch/optim/adamw.h>
#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "flashtrain/models/language_model.h"
#include "flashtrain/trainer/batch_source.h"

namespace at::cuda {
struct CUDAGraph;
}

namespace flashtrain::trainer {

struct DeviceStepOptions {
  bool bf16 = false;       // autocast to bf16 around the forward
  double grad_clip = 0.0;  // clip the global gradient norm to this; 0: measure only
  bool graph = false;      // capture and replay (CUDA only)
};

struct DeviceStepResult {
  double loss_sum = 0.0;   // summed over the step's scored tokens
  double grad_norm = 0.0;  // before clipping
  bool skipped = false;    // the loss or the norm was not finite: no update
};

class DeviceStep {
 public:
  // Steps the eager loop warms up with before the capture.
  static constexpr int kEagerSteps = 2;

  DeviceStep(models::LanguageModelImpl& model, torch::optim::AdamW& optimizer, DeviceStepOptions options);
  ~DeviceStep();
  DeviceStep(const DeviceStep&) = delete;
  DeviceStep& operator=(const DeviceStep&) = delete;

  // Queues one optimizer step over `micro_batches` (the same count and shapes
  // every step) at learning rate `lr`, each micro-batch's summed loss divided
  // by `normaliser`. Does not wait for the device.
  void enqueue(const std::vector<Batch>& micro_batches, double normaliser, double lr);

  // Waits for the queued steps and returns their results in order: the only
  // host sync.
  std::vector<DeviceStepResult> collect();

  std::size_t queued() const { return queued_reports_.size(); }

  // enqueue() and collect() of one step.
  DeviceStepResult run(const std::vector<Batch>& micro_batches, double normaliser, double lr);

  // The optimizer's per-parameter step counts as the device has them (after
  // collect(): a queued step is not counted yet).
  void sync_optimizer_state();

  bool captured() const { return graph_ != nullptr; }

 private:
  struct Group {
    std::vector<torch::Tensor> params, exp_avgs, exp_avg_sqs, steps;
    double weight_decay = 0.0;
  };

  void stage(const std::vector<Batch>& micro_batches, double normaliser, double lr);
  void step_body();  // the device work of one step: what the graph holds

  models::LanguageModelImpl& model_;
  torch::optim::AdamW& optimizer_;
  DeviceStepOptions options_;
  double beta1_ = 0.9, beta2_ = 0.999, eps_ = 1e-8;
  std::vector<Group> groups_;
  std::int64_t adam_steps_ = 0;  // updates taken, as the step tensors count them

  // Fixed buffers: the graph reads and writes these addresses.
  std::vector<torch::Tensor> inputs_, targets_;
  torch::Tensor lr_, normaliser_, report_;
  std::vector<torch::Tensor> queued_reports_;  // a copy of report_ per queued step
  int eager_steps_run_ = 0;
  // A capture needs a stream other than the default one; the warm-up steps and
  // the replays run on the same one.
  std::optional<c10::cuda::CUDAStream> stream_;
  std::unique_ptr<at::cuda::CUDAGraph> graph_;
};

}  // namespace flashtrain::trainer

#include "flashtrain/trainer/device_step.h"

#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/torch.h>

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "token_loss.h"
#include "flashtrain/data/tasks.h"
#include "flashtrain/distributed/reducer.h"

namespace flashtrain::trainer {
namespace {

// Restores autocast's weight-cast cache on leaving a capture. A capture must
// not reuse casts made outside it, and casts it makes would outlive the
// capture in the cache.
class AutocastCacheOff {
 public:
  AutocastCacheOff() : was_enabled_(at::autocast::is_autocast_cache_enabled()) {
    at::autocast::set_autocast_cache_enabled(false);
  }
  ~AutocastCacheOff() { at::autocast::set_autocast_cache_enabled(was_enabled_); }
  AutocastCacheOff(const AutocastCacheOff&) = delete;
  AutocastCacheOff& operator=(const AutocastCacheOff&) = delete;

 private:
  bool was_enabled_;
};

torch::Tensor scalar_on(torch::Device device, torch::Dtype dtype) {
  return torch::zeros({}, torch::TensorOptions(dtype).device(device));
}

}  // namespace

DeviceStep::DeviceStep(models::LanguageModelImpl& model, torch::optim::AdamW& optimizer,
                       DeviceStepOptions options)
    : model_(model), optimizer_(optimizer), options_(options) {
  const torch::Device device = model.parameters().front().device();
  if (options_.graph && !device.is_cuda())
    throw std::invalid_argument("DeviceStep: a CUDA graph needs the model on a GPU, not " + device.str());
  // One step count for every parameter: the loop updates them all or none.
  std::optional<std::int64_t> steps_taken;
  for (auto& param_group : optimizer_.param_groups()) {
    const auto& o = static_cast<const torch::optim::AdamWOptions&>(param_group.options());
    beta1_ = std::get<0>(o.betas());
    beta2_ = std::get<1>(o.betas());
    eps_ = o.eps();
    if (o.amsgrad()) throw std::invalid_argument("DeviceStep: AdamW with amsgrad is not supported");
    Group group;
    group.weight_decay = o.weight_decay();
    for (const torch::Tensor& p : param_group.params()) {
      auto& slot = optimizer_.state()[p.unsafeGetTensorImpl()];
      if (!slot) {  // what AdamW::step() creates before its first update
        auto fresh = std::make_unique<torch::optim::AdamWParamState>();
        fresh->step(0);
        fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        slot = std::move(fresh);
      }
      auto& state = static_cast<torch::optim::AdamWParamState&>(*slot);
      if (steps_taken && *steps_taken != state.step())
        throw std::invalid_argument("DeviceStep: the parameters' AdamW step counts differ");
      steps_taken = state.step();
      group.params.push_back(p);
      group.exp_avgs.push_back(state.exp_avg());
      group.exp_avg_sqs.push_back(state.exp_avg_sq());
    }
    groups_.push_back(std::move(group));
  }
  adam_steps_ = steps_taken.value_or(0);
  for (Group& group : groups_)
    for (std::size_t i = 0; i < group.params.size(); ++i)
      group.steps.push_back(torch::full({}, double(adam_steps_), torch::TensorOptions(torch::kFloat).device(device)));
  lr_ = scalar_on(device, torch::kFloat);
  scored_ = torch::zeros({1}, torch::TensorOptions(torch::kDouble).device(device));
  normaliser_ = scalar_on(device, torch::kFloat);
  loss_sum_ = scalar_on(device, torch::kDouble);
  report_ = torch::zeros({4}, torch::TensorOptions(torch::kDouble).device(device));
  if (options_.graph) {
    stream_ = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index());
    if (options_.reducer) {
      c10::cuda::CUDAStreamGuard on_step_stream(*stream_);
      options_.reducer->accumulate_on_current_stream();
    }
  }
}

DeviceStep::~DeviceStep() = default;

void DeviceStep::stage(const std::vector<Batch>& micro_batches, std::int64_t scored_tokens, double lr) {
  if (inputs_.empty()) {
    for (const Batch& batch : micro_batches) {
      inputs_.push_back(torch::empty_like(batch.inputs));
      targets_.push_back(torch::empty_like(batch.targets));
    }
  }
  if (micro_batches.size() != inputs_.size())
    throw std::runtime_error("DeviceStep: " + std::to_string(micro_batches.size()) + " micro-batches where the " +
                             "first step had " + std::to_string(inputs_.size()));
  for (std::size_t i = 0; i < micro_batches.size(); ++i) {
    const Batch& batch = micro_batches[i];
    if (batch.inputs.sizes() != inputs_[i].sizes() || batch.targets.sizes() != targets_[i].sizes())
      throw std::runtime_error("DeviceStep: a batch of shape " + c10::str(batch.inputs.sizes()) +
                               " where the first step had " + c10::str(inputs_[i].sizes()) +
                               "; a CUDA graph needs the same shapes every step (training.cuda_graph = off)");
    inputs_[i].copy_(batch.inputs, /*non_blocking=*/true);
    targets_[i].copy_(batch.targets, /*non_blocking=*/true);
  }
  lr_.fill_(lr);
  scored_.fill_(double(scored_tokens));
  // One process knows the normaliser now; ranks learn it on the device.
  if (!options_.reducer) normaliser_.fill_(double(std::max<std::int64_t>(scored_tokens, 1)));
}

void DeviceStep::sum_scored_over_ranks() {
  distributed::Reducer* reducer = options_.reducer;
  if (!reducer) return;
  distributed::Communicator& comm = reducer->communicator();
  comm.all_reduce_sum(scored_)->wait_on_device();
  // As the eager loop: the Reducer averages, so each rank divides by the
  // global count over the world size (in double, then float, as the host does).
  normaliser_.copy_(scored_.reshape({}).clamp_min(1.0) / double(comm.world_size()));
}

void DeviceStep::forward_backward() {
  distributed::Reducer* reducer = options_.reducer;
  if (reducer) reducer->zero_grad();  // the bucket views stay the gradients
  else optimizer_.zero_grad(/*set_to_none=*/true);  // the capture's backward allocates them in its pool
  loss_sum_.zero_();
  for (std::size_t i = 0; i < inputs_.size(); ++i) {
    // Only the last micro-step's backward communicates, where it does.
    if (reducer) reducer->prepare_for_backward(/*sync=*/!allreduce_between_graphs() && i + 1 == inputs_.size());
    const torch::Tensor loss = summed_token_loss(forward_logits(model_, inputs_[i], options_.bf16), targets_[i]);
    (loss / normaliser_).backward();
    loss_sum_ += loss.detach().to(torch::kDouble);
  }
}

void DeviceStep::reduce_over_ranks() {
  distributed::Reducer* reducer = options_.reducer;
  if (!reducer) return;
  if (allreduce_between_graphs()) reducer->reduce_all_now();
  reducer->wait_all_on_device();
  reducer->communicator().all_reduce_sum(loss_sum_)->wait_on_device();
}

void DeviceStep::update() {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> grads;
  for (const Group& group : groups_)
    for (const torch::Tensor& p : group.params)
      // A parameter the loss does not reach gets a zero gradient: the fused
      // step needs one per parameter (its moments still decay, as in AdamW).
      grads.push_back(p.grad().defined() ? p.grad() : (p.mutable_grad() = torch::zeros_like(p)));
  const torch::Tensor norm = torch::stack(at::_foreach_norm(grads, 2)).norm(2);
  const torch::Tensor found_inf = torch::logical_not(torch::isfinite(loss_sum_) & torch::isfinite(norm)).to(torch::kFloat);
  if (options_.grad_clip > 0) {
    // As clip_grad_norm(): scale only a finite norm above the limit.
    const torch::Tensor scale = torch::where(torch::isfinite(norm) & (norm > options_.grad_clip),
                                             options_.grad_clip / (norm + 1e-6), torch::ones_like(norm));
    at::_foreach_mul_(grads, scale);
  }
  std::size_t first = 0;
  for (Group& group : groups_) {
    if (group.params.empty()) continue;
    const at::TensorList group_grads(grads.data() + first, group.params.size());
    first += group.params.size();
    // AdamW's bias correction reads the count of this update; a skipped
    // update leaves the count where it was (the kernel returns on found_inf).
    at::_foreach_add_(group.steps, torch::ones_like(found_inf) - found_inf);
    at::_fused_adamw_(group.params, group_grads, group.exp_avgs, group.exp_avg_sqs, /*max_exp_avg_sqs=*/{},
                      group.steps, lr_, beta1_, beta2_, group.weight_decay, eps_, /*amsgrad=*/false,
                      /*maximize=*/false, /*grad_scale=*/std::nullopt, found_inf);
  }
  report_.copy_(torch::stack({loss_sum_, scored_.reshape({}), norm.to(torch::kDouble),
                              found_inf.to(torch::kDouble)}));
}

void DeviceStep::replay(std::size_t index, const std::function<void()>& phase) {
  if (graphs_.size() <= index) {
    graphs_.resize(index + 1);
    graphs_[index] = std::make_unique<at::cuda::CUDAGraph>();
    AutocastCacheOff no_cast_cache;
    // Thread-local: the capture forbids this thread's unsafe CUDA calls, not
    // those of others (the batch producer, the communicator's watchdog).
    graphs_[index]->capture_begin(/*pool=*/{0, 0}, cudaStreamCaptureModeThreadLocal);
    phase();
    graphs_[index]->capture_end();
  }
  graphs_[index]->replay();
}

void DeviceStep::enqueue(const std::vector<Batch>& micro_batches, std::int64_t scored_tokens, double lr) {
  if (micro_batches.empty()) throw std::invalid_argument("DeviceStep: no micro-batches");
  std::optional<c10::cuda::CUDAStreamGuard> on_step_stream;
  if (stream_) {
    at::cuda::CUDAEvent batches_ready;  // made on the caller's stream
    batches_ready.record(c10::cuda::getCurrentCUDAStream(stream_->device_index()));
    batches_ready.block(*stream_);
    // The batches were made on the caller's stream and are read on this one:
    // their memory must not be handed out again before these reads ran.
    for (const Batch& batch : micro_batches)
      for (const torch::Tensor& t : {batch.inputs, batch.targets})
        if (t.is_cuda()) c10::cuda::CUDACachingAllocator::recordStream(t.storage().data_ptr(), *stream_);
    on_step_stream.emplace(*stream_);
  }
  stage(micro_batches, scored_tokens, lr);
  const auto whole_step = [this] {
    sum_scored_over_ranks();
    forward_backward();
    reduce_over_ranks();
    update();
  };
  if (!options_.graph || eager_steps_run_ < kEagerSteps) {
    whole_step();
    ++eager_steps_run_;
  } else if (allreduce_between_graphs()) {
    sum_scored_over_ranks();
    replay(0, [this] { forward_backward(); });
    reduce_over_ranks();
    replay(1, [this] { update(); });
  } else {
    replay(0, whole_step);
  }
  queued_reports_.push_back(report_.clone());  // the graph overwrites report_ next step
  if (options_.reducer && report_.is_cuda()) {
    queued_done_.emplace_back();
    queued_done_.back().record(c10::cuda::getCurrentCUDAStream(report_.device().index()));
    // At most kStepsInFlight steps ahead of the device: behind a rank that
    // died, the device stops at an all-reduce, and launches into a full queue
    // would block this thread where no watch sees it.
    while (queued_done_.size() - steps_waited_ > kStepsInFlight) wait_for_step(steps_waited_++);
  }
}

void DeviceStep::wait_for_step(std::size_t index) {
  at::cuda::CUDAEvent& done = queued_done_.at(index);
  options_.reducer->communicator().wait_until([&done] { return done.query(); },
                                              "a queued training step (its all-reduces)");
}

std::vector<DeviceStepResult> DeviceStep::collect() {
  std::vector<DeviceStepResult> results;
  if (queued_reports_.empty()) return results;
  std::optional<c10::cuda::CUDAStreamGuard> on_step_stream;
  if (stream_) on_step_stream.emplace(*stream_);
  // A step whose all-reduce never completes (a rank died) must end in an
  // error naming it, not hang the copy below.
  while (steps_waited_ < queued_done_.size()) wait_for_step(steps_waited_++);
  queued_done_.clear();
  steps_waited_ = 0;
  const torch::Tensor values = torch::stack(queued_reports_).to(torch::kCPU);  // waits for the steps
  queued_reports_.clear();
  const auto v = values.accessor<double, 2>();
  for (std::int64_t i = 0; i < values.size(0); ++i) {
    results.push_back({v[i][0], v[i][1], v[i][2], v[i][3] != 0.0});
    if (!results.back().skipped) ++adam_steps_;
  }
  return results;
}

DeviceStepResult DeviceStep::run(const std::vector<Batch>& micro_batches, std::int64_t scored_tokens, double lr) {
  if (!queued_reports_.empty()) throw std::logic_error("DeviceStep::run: collect() the queued steps first");
  enqueue(micro_batches, scored_tokens, lr);
  return collect().front();
}

void DeviceStep::sync_optimizer_state() {
  if (!queued_reports_.empty())
    throw std::logic_error("DeviceStep::sync_optimizer_state: collect() the queued steps first");
  for (const Group& group : groups_)
    for (const torch::Tensor& p : group.params)
      static_cast<torch::optim::AdamWParamState&>(*optimizer_.state().at(p.unsafeGetTensorImpl()))
          .step(adam_steps_);
}

}  // namespace flashtrain::trainer

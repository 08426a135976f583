#include "flashtrain/trainer/step/device_step.h"

#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/torch.h>

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "step/token_loss.h"
#include "flashtrain/data/tasks.h"
#include "flashtrain/distributed/reducer.h"
#include "flashtrain/trainer/step/graph_capture.h"

namespace flashtrain::trainer {
namespace {

torch::Tensor scalar_on(torch::Device device, torch::Dtype dtype) {
  return torch::zeros({}, torch::TensorOptions(dtype).device(device));
}

}  // namespace

std::string cuda_graph_blocker(const config::Config& config, torch::Device device) {
  if (!device.is_cuda()) return "training runs on the CPU";
  if (config.debug.anomaly_detection) return "debug.anomaly_detection checks every op from the host";
  return "";
}

bool step_is_graphed(const config::Config& config, torch::Device device) {
  return config.training.cuda_graph != "off" && cuda_graph_blocker(config, device).empty();
}

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
  if (staged_inputs_.empty()) {
    for (const Batch& batch : micro_batches) {
      staged_inputs_.push_back(torch::empty_like(batch.inputs));
      staged_targets_.push_back(torch::empty_like(batch.targets));
    }
    inputs_ = staged_inputs_;
    targets_ = staged_targets_;
  }
  if (micro_batches.size() != staged_inputs_.size())
    throw std::runtime_error("DeviceStep: " + std::to_string(micro_batches.size()) + " micro-batches where the " +
                             "first step had " + std::to_string(staged_inputs_.size()));
  for (std::size_t i = 0; i < micro_batches.size(); ++i) {
    const Batch& batch = micro_batches[i];
    if (batch.inputs.sizes() != staged_inputs_[i].sizes() || batch.targets.sizes() != staged_targets_[i].sizes())
      throw std::runtime_error("DeviceStep: a batch of shape " + c10::str(batch.inputs.sizes()) +
                               " where the first step had " + c10::str(staged_inputs_[i].sizes()) +
                               "; a CUDA graph needs the same shapes every step (training.cuda_graph = off)");
    staged_inputs_[i].copy_(batch.inputs, /*non_blocking=*/true);
    staged_targets_[i].copy_(batch.targets, /*non_blocking=*/true);
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
    if (i == 0 && !capturing_) throw_injected_out_of_memory(options_.inject_out_of_memory.steps, "a step");
    (loss / normaliser_).backward();
    loss_sum_ += loss.detach().to(torch::kDouble);
  }
}

void DeviceStep::throw_injected_out_of_memory(int& remaining, const char* where) {
  if (remaining <= 0) return;
  --remaining;
  TORCH_CHECK_WITH(OutOfMemoryError, false, "CUDA out of memory (injected into ", where, " by a fault test)");
}

void DeviceStep::split_micro_batches() {
  parts_ *= 2;
  inputs_.clear();
  targets_.clear();
  for (std::size_t i = 0; i < staged_inputs_.size(); ++i) {
    for (const torch::Tensor& part : staged_inputs_[i].chunk(parts_)) inputs_.push_back(part);
    for (const torch::Tensor& part : staged_targets_[i].chunk(parts_)) targets_.push_back(part);
  }
}

void DeviceStep::run_eagerly() {
  sum_scored_over_ranks();
  for (;;) {
    try {
      forward_backward();
      break;
    } catch (const c10::Error& e) {
      if (!is_out_of_memory(e)) throw;
      const std::int64_t sequences = staged_inputs_.front().size(0) / parts_;
      if (options_.reducer)
        throw std::runtime_error(std::string("out of memory in the training step (data parallel: the ranks cannot "
                                             "change the step together); set training.local_batch_size below ") +
                                 std::to_string(sequences) + " or training.local_batch_size = auto: " +
                                 e.what_without_backtrace());
      if (sequences < 2)
        throw std::runtime_error(std::string("out of memory in the training step even with one sequence at a "
                                             "time; the model does not fit this GPU at this context: ") +
                                 e.what_without_backtrace());
      optimizer_.zero_grad(/*set_to_none=*/true);
      c10::cuda::CUDACachingAllocator::emptyCache();
      split_micro_batches();
      if (options_.notice)
        options_.notice("out of memory in the step with micro-batches of " + std::to_string(sequences) +
                        " sequences: each now runs as " + std::to_string(parts_) + " parts of about " +
                        std::to_string(sequences / 2) +
                        " (gradient accumulation: the same update); a smaller training.local_batch_size starts so");
    }
  }
  reduce_over_ranks();
  update();
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

bool DeviceStep::replay(std::size_t index, const std::function<void()>& phase) {
  if (graphs_.size() <= index) {
    const c10::DeviceIndex device = stream_->device_index();
    // The eager steps' cached blocks are of no use to the graph's private
    // pool: give them back first (gradients included, which the captured
    // backward allocates anew), so that the GPU holds one step's memory, not two.
    if (!options_.reducer) optimizer_.zero_grad(/*set_to_none=*/true);  // a reducer's buckets stay
    c10::cuda::CUDACachingAllocator::emptyCache();
    auto graph = std::make_unique<at::cuda::CUDAGraph>();
    capturing_ = true;
    try {
      graph_pool_bytes_ += capture_graph(*graph, [&] {
        phase();
        throw_injected_out_of_memory(options_.inject_out_of_memory.captures, "the capture");
      });
      capturing_ = false;
    } catch (const c10::Error& e) {
      capturing_ = false;
      if (!is_out_of_memory(e)) throw;
      if (options_.reducer)
        throw std::runtime_error(std::string("out of memory while capturing the training step's CUDA graph "
                                             "(data parallel: the ranks cannot change the step together); set "
                                             "training.cuda_graph = off or a smaller training.local_batch_size: ") +
                                 e.what_without_backtrace());
      graph.reset();
      graphs_.clear();
      graph_pool_bytes_ = 0;
      graph_failed_ = true;
      optimizer_.zero_grad(/*set_to_none=*/true);  // gradients the failed capture left in its pool
      c10::cuda::CUDACachingAllocator::emptyCache();
      if (options_.notice)
        options_.notice("cuda graph: the capture ran out of memory; the steps run eagerly from here "
                        "(training.cuda_graph = off starts so)");
      return false;
    }
    graphs_.resize(index + 1);
    graphs_[index] = std::move(graph);
    // The capture's allocations are the pool's now: the peak from here on is
    // the eager allocations beside the pool (graph_pool_bytes()).
    c10::cuda::CUDACachingAllocator::resetPeakStats(device);
  }
  graphs_[index]->replay();
  return true;
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
  if (!options_.graph || graph_failed_ || eager_steps_run_ < kEagerSteps) {
    run_eagerly();
    ++eager_steps_run_;
  } else if (allreduce_between_graphs()) {  // data parallel: a failed capture throws
    sum_scored_over_ranks();
    replay(0, [this] { forward_backward(); });
    reduce_over_ranks();
    replay(1, [this] { update(); });
  } else if (!replay(0, whole_step)) {
    run_eagerly();
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

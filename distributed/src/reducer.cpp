#include "flashtrain/distributed/reducer.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <chrono>
#include <sstream>
#include <stdexcept>

namespace flashtrain::distributed {
namespace {

// Runs after a parameter's AccumulateGrad node wrote its .grad.
class ReadyHook : public torch::autograd::FunctionPostHook {
 public:
  ReadyHook(Reducer* reducer, std::size_t param) : reducer_(reducer), param_(param) {}
  torch::autograd::variable_list operator()(
      const torch::autograd::variable_list& outputs,
      const torch::autograd::variable_list& /*inputs*/) override {
    reducer_->mark_ready(param_);
    return outputs;
  }

 private:
  Reducer* reducer_;
  std::size_t param_;
};

std::vector<std::int64_t> row_major_strides(c10::IntArrayRef sizes) {
  std::vector<std::int64_t> strides(sizes.size(), 1);
  for (std::size_t d = sizes.size(); d-- > 1;) strides[d - 1] = strides[d] * sizes[d];
  return strides;
}

}  // namespace

Reducer::Reducer(std::vector<torch::Tensor> params, std::vector<std::string> names,
                 std::shared_ptr<Communicator> comm, BucketOptions options)
    : params_(std::move(params)), comm_(std::move(comm)) {
  if (!comm_) throw std::invalid_argument("Reducer: no communicator");
  if (names.size() != params_.size())
    throw std::invalid_argument("Reducer: " + std::to_string(names.size()) + " names for " +
                                std::to_string(params_.size()) + " parameters");
  for (std::size_t k = 0; k < params_.size(); ++k) {
    const auto& p = params_[k];
    if (!p.defined() || !p.requires_grad() || !p.is_leaf())
      throw std::invalid_argument("Reducer: parameter '" + names[k] +
                                  "' is not a leaf tensor requiring grad");
    specs_.push_back(ParamSpec{names[k], p.numel(), static_cast<std::int64_t>(p.element_size()),
                               static_cast<int>(p.scalar_type())});
  }
  plan_ = plan_buckets(specs_, options);
  views_.resize(params_.size());
  for (const Bucket& bucket : plan_.buckets) {
    const auto& first = params_[bucket.entries.front().param];
    torch::Tensor buffer = torch::zeros({bucket.numel}, first.options().requires_grad(false));
    for (const BucketEntry& e : bucket.entries) {
      const auto& p = params_[e.param];
      if (p.device() != first.device())
        throw std::invalid_argument("Reducer: parameters of one bucket on different devices ('" +
                                    specs_[e.param].name + "')");
      views_[e.param] = buffer.as_strided(p.sizes(), row_major_strides(p.sizes()), e.offset);
    }
    buffers_.push_back(buffer);
  }
  bind_grads();
  add_hooks();
  ready_.assign(params_.size(), false);
  pending_.assign(plan_.buckets.size(), 0);
}

Reducer::~Reducer() { remove_hooks(); }

void Reducer::add_hooks() {
  for (std::size_t k = 0; k < params_.size(); ++k) {
    auto acc = torch::autograd::impl::grad_accumulator(params_[k]);
    hook_keys_.push_back(acc->add_post_hook(std::make_unique<ReadyHook>(this, k)));
    accumulators_.push_back(std::move(acc));
  }
}

void Reducer::remove_hooks() {
  for (std::size_t k = 0; k < accumulators_.size(); ++k) accumulators_[k]->del_post_hook(hook_keys_[k]);
  accumulators_.clear();
  hook_keys_.clear();
}

void Reducer::accumulate_on_current_stream() {
  // A parameter holds its accumulator weakly: once ours are dropped (and no
  // autograd graph holds one), grad_accumulator() makes a new one.
  const std::vector<std::weak_ptr<torch::autograd::Node>> old(accumulators_.begin(), accumulators_.end());
  remove_hooks();
  add_hooks();
  for (std::size_t k = 0; k < params_.size(); ++k)
    if (accumulators_[k] == old[k].lock())
      throw std::logic_error("Reducer: the gradient accumulator of '" + specs_[k].name +
                             "' is held elsewhere (a live autograd graph?): it stays on its old stream");
}

void Reducer::bind_grads() {
  torch::NoGradGuard no_grad;
  for (std::size_t k = 0; k < params_.size(); ++k) {
    torch::Tensor grad = params_[k].grad();
    if (grad.defined() && grad.data_ptr() == views_[k].data_ptr()) continue;
    // Someone replaced or dropped .grad (optimizer.zero_grad() sets it to
    // none): keep its values, point .grad back into the bucket.
    if (grad.defined()) views_[k].copy_(grad); else views_[k].zero_();
    params_[k].mutable_grad() = views_[k];
  }
}

void Reducer::zero_grad() {
  torch::NoGradGuard no_grad;
  for (auto& b : buffers_) b.zero_();
  bind_grads();
}

void Reducer::prepare_for_backward(bool sync) {
  if (!works_.empty())
    throw std::logic_error("Reducer: prepare_for_backward before wait_all of the last sync step");
  bind_grads();
  sync_ = sync;
  prepared_ = true;
  ready_.assign(params_.size(), false);
  for (std::size_t b = 0; b < plan_.buckets.size(); ++b)
    pending_[b] = plan_.buckets[b].entries.size();
  next_bucket_ = 0;
  launch_order_.clear();
}

void Reducer::mark_ready(std::size_t param) {
  if (!prepared_ || !sync_) return;  // no communication on this micro-step
  if (ready_[param])
    throw std::logic_error("Reducer: parameter '" + specs_[param].name +
                           "' got two gradients in one backward (call prepare_for_backward "
                           "before each backward)");
  ready_[param] = true;
  --pending_[plan_.bucket_of[param]];
  launch_ready_buckets();
}

void Reducer::launch_ready_buckets() {
  // In plan order, so that every rank issues the same sequence of collectives.
  while (next_bucket_ < plan_.buckets.size() && pending_[next_bucket_] == 0) {
    torch::NoGradGuard no_grad;
    torch::Tensor& buffer = buffers_[next_bucket_];
    if (comm_->world_size() > 1) buffer.div_(comm_->world_size());
    works_.push_back(comm_->all_reduce_sum(buffer));
    launch_order_.push_back(next_bucket_);
    ++launches_;
    ++next_bucket_;
  }
}

bool Reducer::all_buckets_launched() {
  if (!prepared_) return false;
  if (sync_ && next_bucket_ < plan_.buckets.size()) {
    std::ostringstream msg;
    msg << "Reducer: bucket " << next_bucket_ << " was never all-reduced; parameters without a "
        << "gradient in this backward:";
    int shown = 0;
    for (std::size_t k = 0; k < params_.size() && shown < 8; ++k)
      if (!ready_[k]) msg << (shown++ ? ", " : " ") << specs_[k].name;
    works_.clear();
    prepared_ = false;
    throw std::runtime_error(msg.str());
  }
  if (!sync_) {
    prepared_ = false;
    return false;
  }
  return true;
}

void Reducer::wait_all() {
  if (!all_buckets_launched()) return;
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  comm_->synchronize_compute();
  const auto computed = Clock::now();
  for (auto& w : works_) w->wait();
  const auto reduced = Clock::now();
  stats_.sync_steps += 1;
  stats_.backward_tail_seconds += std::chrono::duration<double>(computed - start).count();
  stats_.wait_seconds += std::chrono::duration<double>(reduced - computed).count();
  for (auto& w : works_) {
    stats_.collectives += 1;
    if (const auto d = w->duration_seconds()) {
      stats_.comm_seconds += *d;
      stats_.timed_collectives += 1;
    }
  }
  for (std::size_t b : launch_order_) stats_.bytes += plan_.buckets[b].bytes();
  works_.clear();
  prepared_ = false;
}

void Reducer::wait_all_on_device() {
  if (!all_buckets_launched()) return;
  for (auto& w : works_) w->wait_on_device();
  works_.clear();
  prepared_ = false;
}

void Reducer::reduce_all_now() {
  prepare_for_backward(/*sync=*/true);
  for (std::size_t k = 0; k < params_.size(); ++k) mark_ready(k);
}

ReducerStats Reducer::take_stats() {
  ReducerStats out = stats_;
  stats_ = ReducerStats{};
  return out;
}

std::optional<double> ReducerStats::overlap() const {
  if (timed_collectives == 0 || comm_seconds <= 0.0) return std::nullopt;
  return std::clamp(1.0 - wait_seconds / comm_seconds, 0.0, 1.0);
}

}  // namespace flashtrain::distributed

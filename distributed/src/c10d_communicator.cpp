#include "flashtrain/distributed/c10d_communicator.h"

#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include "flashtrain/distributed/rendezvous.h"

namespace flashtrain::distributed {
namespace {

class C10dWork : public Work {
 public:
  C10dWork(c10::intrusive_ptr<c10d::Work> work, torch::Tensor staged, torch::Tensor target, WaitWatch watch,
           std::string what)
      : work_(std::move(work)), staged_(std::move(staged)), target_(std::move(target)), watch_(std::move(watch)),
        what_(std::move(what)) {}

  void wait() override { finish(/*watch_on_host=*/true); }

  void wait_on_device() override { finish(/*watch_on_host=*/false); }

  bool is_completed() override { return done_ || work_->isCompleted(); }

  std::optional<double> duration_seconds() override {
    if (!done_) return std::nullopt;
    try {
      return double(work_->getDuration()) / 1000.0;  // ms; needs TORCH_NCCL_ENABLE_TIMING
    } catch (const c10::Error&) {
      return std::nullopt;
    }
  }

 private:
  void finish(bool watch_on_host) {
    if (done_) return;
    try {
      if (watch_on_host) wait_watched([this] { return work_->isCompleted(); }, what_, watch_);
      work_->wait();  // rethrows the backend's error; orders the current stream after the collective
    } catch (const c10::Error& e) {
      throw CommunicationError("rank " + std::to_string(watch_.rank) + ": " + what_ + " failed: " +
                               e.what_without_backtrace());
    }
    if (target_.defined()) {
      torch::NoGradGuard no_grad;
      target_.copy_(staged_);
    }
    done_ = true;
  }

  c10::intrusive_ptr<c10d::Work> work_;
  torch::Tensor staged_;  // on the device when the caller's tensor is not
  torch::Tensor target_;  // the caller's tensor, filled from staged_ by wait()
  WaitWatch watch_;
  std::string what_;
  bool done_ = false;
};

}  // namespace

C10dCommunicator::C10dCommunicator(c10::intrusive_ptr<c10d::Backend> backend,
                                   c10::intrusive_ptr<c10d::Store> store, torch::Device device, WaitWatch watch,
                                   std::string name)
    : backend_(std::move(backend)), store_(std::move(store)), device_(device), watch_(std::move(watch)),
      name_(std::move(name)) {}

void C10dCommunicator::finish() {
  barrier();
  if (store_) depart(*store_, rank(), world_size(), watch_);
}

C10dCommunicator::~C10dCommunicator() {
  try {
    backend_->shutdown();
  } catch (const std::exception&) {
    // Leaving anyway; the watchdog threads end with the process.
  }
}

std::shared_ptr<Work> C10dCommunicator::all_reduce_sum(torch::Tensor flat) {
  torch::NoGradGuard no_grad;
  const bool stage = flat.device() != device_ || !flat.is_contiguous();  // NCCL wants dense device tensors
  torch::Tensor on_device = stage ? flat.to(device_).contiguous() : flat;
  std::vector<at::Tensor> tensors{on_device};
  c10d::AllreduceOptions options;
  options.reduceOp = c10d::ReduceOp::SUM;
  const std::string what = "all-reduce #" + std::to_string(sequence_++) + " (" +
                           std::to_string(flat.numel() * flat.element_size()) + " bytes)";
  return std::make_shared<C10dWork>(backend_->allreduce(tensors, options), on_device,
                                    stage ? flat : torch::Tensor(), watch_, what);
}

std::shared_ptr<Work> C10dCommunicator::broadcast(torch::Tensor tensor, int root) {
  if (root < 0 || root >= world_size())
    throw std::invalid_argument("broadcast: root " + std::to_string(root) + " out of range for world size " +
                                std::to_string(world_size()));
  torch::NoGradGuard no_grad;
  const bool stage = tensor.device() != device_ || !tensor.is_contiguous();
  torch::Tensor on_device = stage ? tensor.to(device_).contiguous() : tensor;
  std::vector<at::Tensor> tensors{on_device};
  c10d::BroadcastOptions options;
  options.rootRank = root;
  const std::string what = "broadcast #" + std::to_string(sequence_++) + " from rank " + std::to_string(root);
  return std::make_shared<C10dWork>(backend_->broadcast(tensors, options), on_device,
                                    stage ? tensor : torch::Tensor(), watch_, what);
}

void C10dCommunicator::barrier() {
  // An all-reduce of one element: unlike c10d's barrier it needs no guess of
  // the device, and it is watched like every other collective.
  all_reduce_sum(torch::ones({1}, torch::TensorOptions().device(device_)))->wait();
}

void C10dCommunicator::wait_until(const std::function<bool()>& done, const std::string& what) {
  wait_watched(done, what, watch_);
}

void C10dCommunicator::synchronize_compute() {
  if (device_.is_cuda()) c10::cuda::getCurrentCUDAStream(device_.index()).synchronize();
}

}  // namespace flashtrain::distributed

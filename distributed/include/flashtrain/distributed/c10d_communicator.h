#pragma once
// A Communicator over a c10d Backend (ProcessGroupNCCL; nccl_backend.h makes
// one). Collectives are asynchronous on the backend's own stream; wait()
// polls completion under a WaitWatch (watched_wait.h), so a dead or stuck
// peer ends in a CommunicationError naming it rather than a hang. Tensors
// that are not on the communicator's device (small CPU tensors of the
// start-up check, the stop agreement) are staged through it and copied back
// by wait(). wait_on_device() only orders the caller's stream after the
// collective: ProcessGroupNCCL lets a CUDA graph capture its collectives, and
// the host then watches the replayed graph through wait_until().
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "flashtrain/distributed/communicator.h"
#include "flashtrain/distributed/watched_wait.h"

namespace flashtrain::distributed {

class C10dCommunicator : public Communicator {
 public:
  // `store`: the rendezvous store, for finish()'s departure.
  C10dCommunicator(c10::intrusive_ptr<c10d::Backend> backend, c10::intrusive_ptr<c10d::Store> store,
                   torch::Device device, WaitWatch watch, std::string name);
  // Shuts the backend down cleanly (all ranks should have passed a barrier).
  ~C10dCommunicator() override;

  int rank() const override { return backend_->getRank(); }
  int world_size() const override { return backend_->getSize(); }
  std::shared_ptr<Work> all_reduce_sum(torch::Tensor flat) override;
  std::shared_ptr<Work> broadcast(torch::Tensor tensor, int root) override;
  void barrier() override;
  void synchronize_compute() override;
  void wait_until(const std::function<bool()>& done, const std::string& what) override;
  void finish() override;
  std::string backend_name() const override { return name_; }

 private:
  c10::intrusive_ptr<c10d::Backend> backend_;
  c10::intrusive_ptr<c10d::Store> store_;
  torch::Device device_;
  WaitWatch watch_;
  std::string name_;
  std::int64_t sequence_ = 0;
};

}  // namespace flashtrain::distributed

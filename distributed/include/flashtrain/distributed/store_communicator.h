#pragma once
// Collectives of CPU tensors through the rendezvous TCPStore: each rank
// publishes its tensor under a key per collective; wait() reads every rank's
// and sums them in rank order, so all ranks get bitwise the same result. Slow
// (every byte goes through one TCP server) but needs neither GPUs nor Gloo:
// it lets CPU tests and tiny models run the real multi-process code path.
// Waits are watched (watched_wait.h) like NCCL's.
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "flashtrain/distributed/communicator.h"
#include "flashtrain/distributed/watched_wait.h"

namespace flashtrain::distributed {

class StoreCommunicator : public Communicator {
 public:
  StoreCommunicator(c10::intrusive_ptr<c10d::Store> store, int rank, int world_size, WaitWatch watch);

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  // CPU tensors only (throws std::invalid_argument otherwise).
  std::shared_ptr<Work> all_reduce_sum(torch::Tensor flat) override;
  std::shared_ptr<Work> broadcast(torch::Tensor tensor, int root) override;
  void barrier() override;
  void finish() override;
  std::string backend_name() const override { return "store"; }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
  int rank_;
  int world_size_;
  WaitWatch watch_;
  std::int64_t sequence_ = 0;
};

}  // namespace flashtrain::distributed

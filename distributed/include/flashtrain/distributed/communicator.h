#pragma once
// The collectives data parallelism needs, behind an interface: the real one
// wraps c10d's ProcessGroupNCCL (next), tests use FakeCommunicator.
#include <torch/torch.h>

#include <memory>

namespace flashtrain::distributed {

// A launched collective; wait() blocks until its result is in the tensor.
class Work {
 public:
  virtual ~Work() = default;
  virtual void wait() = 0;
  virtual bool is_completed() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // In place, asynchronous. Every rank must launch the same collectives in the
  // same order with tensors of the same size and dtype.
  virtual std::shared_ptr<Work> all_reduce_sum(torch::Tensor flat) = 0;
  virtual std::shared_ptr<Work> broadcast(torch::Tensor tensor, int root) = 0;
  virtual void barrier() = 0;
};

// A finished collective (single process, or a fake completing at once).
class CompletedWork : public Work {
 public:
  void wait() override {}
  bool is_completed() override { return true; }
};

// World size 1: every collective is the identity.
class SingleProcessCommunicator : public Communicator {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  std::shared_ptr<Work> all_reduce_sum(torch::Tensor) override;
  std::shared_ptr<Work> broadcast(torch::Tensor, int root) override;
  void barrier() override {}
};

// Copies rank 0's values into every rank's parameters (blocking).
void broadcast_parameters(Communicator& comm, const std::vector<torch::Tensor>& params);

}  // namespace flashtrain::distributed

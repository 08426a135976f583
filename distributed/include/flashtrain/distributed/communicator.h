#pragma once
// The collectives data parallelism needs, behind an interface: NCCL through
// c10d (c10d_communicator.h), CPU ranks through the rendezvous store
// (store_communicator.h), tests use FakeCommunicator.
#include <torch/torch.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace flashtrain::distributed {

// A launched collective; wait() blocks until its result is in the tensor.
class Work {
 public:
  virtual ~Work() = default;
  virtual void wait() = 0;
  // Orders the work queued after this call on the current CUDA stream after
  // the collective, without blocking the host: the wait a CUDA graph can
  // capture. Backends without device streams wait here.
  virtual void wait_on_device() { wait(); }
  virtual bool is_completed() = 0;
  // How long the collective itself ran (on the GPU for NCCL), once wait()
  // returned; nullopt when the backend does not measure it.
  virtual std::optional<double> duration_seconds() { return std::nullopt; }
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
  // Blocks until the compute work queued so far on this rank's device has
  // run (the current CUDA stream); a no-op on the CPU. The Reducer calls it
  // before waiting on the all-reduces, so that the time it then spends
  // waiting is communication the backward pass did not hide.
  virtual void synchronize_compute() {}
  // Blocks until done() is true: for device work holding collectives the host
  // never waits on one by one (a replayed CUDA graph's all-reduces). Backends
  // that watch their collectives (deadline, gone peers) watch this wait the
  // same way, naming it `what`; the default polls.
  virtual void wait_until(const std::function<bool()>& done, const std::string& what);
  // The last collective of a run: a barrier, after which each rank may exit.
  // Backends whose store lives in rank 0 also make rank 0 leave last, so no
  // rank loses the store while it still talks to it.
  virtual void finish() { barrier(); }
  // "nccl", "store", "single", "fake".
  virtual std::string backend_name() const = 0;
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
  std::string backend_name() const override { return "single"; }
};

// Copies rank 0's values into every rank's parameters (blocking).
void broadcast_parameters(Communicator& comm, const std::vector<torch::Tensor>& params);

}  // namespace flashtrain::distributed

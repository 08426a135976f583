#pragma once
// Several ranks simulated in one process, for tests. A FakeWorld of N ranks
// hands out one FakeCommunicator per rank; the k-th collective a rank launches
// is matched with the k-th of every other rank and completes when the last
// rank launches it (sum, or copy from the root). Ranks may be driven from one
// thread (launch on all ranks, then wait) or from one thread each. Every call
// is recorded. Mismatched collectives (op, size, dtype, root) throw; a wait
// that times out throws naming the ranks that never launched.
#include "flashtrain/distributed/communicator.h"

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace flashtrain::distributed {

struct FakeCall {
  std::string op;  // "all_reduce_sum", "broadcast", "barrier"
  std::int64_t numel = 0;
  int root = -1;
  std::int64_t sequence = 0;  // the collective's index on this rank
};

class FakeWorld : public std::enable_shared_from_this<FakeWorld> {
 public:
  static std::shared_ptr<FakeWorld> create(int world_size,
                                           std::chrono::milliseconds timeout = std::chrono::seconds(10));
  int world_size() const { return world_size_; }
  std::shared_ptr<Communicator> communicator(int rank);
  std::vector<FakeCall> calls(int rank) const;

  // Internal (FakeCommunicator / FakeWork).
  std::shared_ptr<Work> post(int rank, const std::string& op, torch::Tensor tensor, int root);
  void wait(std::int64_t sequence, int rank);
  bool completed(std::int64_t sequence) const;

 private:
  struct Pending {
    std::string op;
    std::int64_t numel = 0;
    int root = -1;
    c10::ScalarType dtype = c10::ScalarType::Undefined;
    std::vector<torch::Tensor> tensors;
    std::vector<bool> posted;
    int count = 0;
    bool done = false;
  };
  FakeWorld(int world_size, std::chrono::milliseconds timeout);
  void complete(Pending& p);

  int world_size_;
  std::chrono::milliseconds timeout_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::int64_t> next_sequence_;
  std::vector<std::vector<FakeCall>> calls_;
  std::map<std::int64_t, Pending> pending_;
};

}  // namespace flashtrain::distributed

#include "fake_communicator.h"

#include <sstream>
#include <stdexcept>

namespace flashtrain::distributed {

namespace {

class FakeCommunicator : public Communicator {
 public:
  FakeCommunicator(std::shared_ptr<FakeWorld> world, int rank)
      : world_(std::move(world)), rank_(rank) {}
  int rank() const override { return rank_; }
  int world_size() const override { return world_->world_size(); }
  std::shared_ptr<Work> all_reduce_sum(torch::Tensor flat) override {
    return world_->post(rank_, "all_reduce_sum", std::move(flat), -1);
  }
  std::shared_ptr<Work> broadcast(torch::Tensor tensor, int root) override {
    if (root < 0 || root >= world_size())
      throw std::invalid_argument("fake broadcast: root " + std::to_string(root) +
                                  " out of range");
    return world_->post(rank_, "broadcast", std::move(tensor), root);
  }
  void barrier() override { world_->post(rank_, "barrier", torch::Tensor(), -1)->wait(); }
  std::string backend_name() const override { return "fake"; }

 private:
  std::shared_ptr<FakeWorld> world_;
  int rank_;
};

class FakeWork : public Work {
 public:
  FakeWork(std::shared_ptr<FakeWorld> world, std::int64_t sequence, int rank)
      : world_(std::move(world)), sequence_(sequence), rank_(rank) {}
  void wait() override { world_->wait(sequence_, rank_); }
  bool is_completed() override { return world_->completed(sequence_); }

 private:
  std::shared_ptr<FakeWorld> world_;
  std::int64_t sequence_;
  int rank_;
};

}  // namespace

FakeWorld::FakeWorld(int world_size, std::chrono::milliseconds timeout)
    : world_size_(world_size), timeout_(timeout), next_sequence_(world_size, 0),
      calls_(world_size) {}

std::shared_ptr<FakeWorld> FakeWorld::create(int world_size, std::chrono::milliseconds timeout) {
  if (world_size < 1) throw std::invalid_argument("FakeWorld: world size must be >= 1");
  return std::shared_ptr<FakeWorld>(new FakeWorld(world_size, timeout));
}

std::shared_ptr<Communicator> FakeWorld::communicator(int rank) {
  if (rank < 0 || rank >= world_size_)
    throw std::invalid_argument("FakeWorld: rank " + std::to_string(rank) + " out of range");
  return std::make_shared<FakeCommunicator>(shared_from_this(), rank);
}

std::vector<FakeCall> FakeWorld::calls(int rank) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return calls_.at(rank);
}

std::shared_ptr<Work> FakeWorld::post(int rank, const std::string& op, torch::Tensor tensor,
                                      int root) {
  std::unique_lock<std::mutex> lock(mutex_);
  const std::int64_t seq = next_sequence_[rank]++;
  const std::int64_t numel = tensor.defined() ? tensor.numel() : 0;
  const auto dtype = tensor.defined() ? tensor.scalar_type() : c10::ScalarType::Undefined;
  calls_[rank].push_back(FakeCall{op, numel, root, seq});
  Pending& p = pending_[seq];
  if (p.count == 0) {
    p.op = op;
    p.numel = numel;
    p.root = root;
    p.dtype = dtype;
    p.tensors.resize(world_size_);
    p.posted.assign(world_size_, false);
  } else if (p.op != op || p.numel != numel || p.root != root || p.dtype != dtype) {
    std::ostringstream msg;
    msg << "fake: collective #" << seq << " mismatch: rank " << rank << " launched " << op
        << "(numel " << numel << ", root " << root << ") but another rank launched " << p.op
        << "(numel " << p.numel << ", root " << p.root << ")";
    throw std::runtime_error(msg.str());
  }
  p.tensors[rank] = tensor;
  p.posted[rank] = true;
  if (++p.count == world_size_) {
    complete(p);
    cv_.notify_all();
  }
  return std::make_shared<FakeWork>(shared_from_this(), seq, rank);
}

void FakeWorld::complete(Pending& p) {
  torch::NoGradGuard no_grad;
  if (p.op == "all_reduce_sum") {
    torch::Tensor sum = torch::zeros_like(p.tensors[0]);
    for (const auto& t : p.tensors) sum.add_(t);  // rank order: deterministic
    for (auto& t : p.tensors) t.copy_(sum);
  } else if (p.op == "broadcast") {
    for (int r = 0; r < world_size_; ++r)
      if (r != p.root) p.tensors[r].copy_(p.tensors[p.root]);
  }
  p.tensors.clear();
  p.done = true;
}

void FakeWorld::wait(std::int64_t sequence, int rank) {
  std::unique_lock<std::mutex> lock(mutex_);
  Pending& p = pending_.at(sequence);
  if (!cv_.wait_for(lock, timeout_, [&] { return p.done; })) {
    std::ostringstream msg;
    msg << "fake: rank " << rank << " timed out waiting on collective #" << sequence << " ("
        << p.op << "); not launched by rank(s)";
    for (int r = 0; r < world_size_; ++r)
      if (!p.posted[r]) msg << " " << r;
    throw std::runtime_error(msg.str());
  }
}

bool FakeWorld::completed(std::int64_t sequence) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return pending_.at(sequence).done;
}

}  // namespace flashtrain::distributed

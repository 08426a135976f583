#include "flashtrain/distributed/store_communicator.h"

#include <cstring>

#include "flashtrain/distributed/rendezvous.h"

namespace flashtrain::distributed {
namespace {

std::vector<std::uint8_t> bytes_of(const torch::Tensor& t) {
  const torch::Tensor c = t.contiguous();
  const auto* p = static_cast<const std::uint8_t*>(c.data_ptr());
  return std::vector<std::uint8_t>(p, p + c.numel() * c.element_size());
}

// A store call that failed: the store is served by rank 0's process, so a
// lost connection means rank 0 is gone; the error names the peers known to
// have exited (on this host) and says so.
CommunicationError store_failure(const WaitWatch& watch, const std::string& what, const c10::Error& error) {
  std::string gone;
  if (watch.gone_peers)
    for (const std::string& peer : watch.gone_peers()) gone += (gone.empty() ? "" : ", ") + peer;
  return CommunicationError("rank " + std::to_string(watch.rank) + ": " + what + " failed: lost the rendezvous "
                            "store that rank 0 serves (" + error.what_without_backtrace() + "); " +
                            (gone.empty() ? "rank 0 has probably exited" : gone + " has exited"));
}

class StoreWork : public Work {
 public:
  // sources: the ranks whose values wait() reads (all for a sum, the root for
  // a broadcast); sum: add them up in rank order, else copy the one.
  StoreWork(c10::intrusive_ptr<c10d::Store> store, std::string base, std::vector<int> sources, bool sum,
            int world_size, torch::Tensor tensor, WaitWatch watch, std::string what)
      : store_(std::move(store)), base_(std::move(base)), sources_(std::move(sources)), sum_(sum),
        world_size_(world_size), tensor_(std::move(tensor)), watch_(std::move(watch)), what_(std::move(what)) {
    for (int r : sources_) keys_.push_back(base_ + "/" + std::to_string(r));
  }

  bool is_completed() override { return done_ || store_->check(keys_); }

  void wait() override {
    if (done_) return;
    const auto start = std::chrono::steady_clock::now();
    try {
      wait_watched([this] { return store_->check(keys_); }, what_, watch_);
      torch::NoGradGuard no_grad;
      torch::Tensor result = torch::zeros_like(tensor_).contiguous();
      for (const std::string& key : keys_) {
        const std::vector<std::uint8_t> value = store_->get(key);
        if (std::int64_t(value.size()) != result.numel() * result.element_size())
          throw CommunicationError("rank " + std::to_string(watch_.rank) + ": " + what_ + ": " + key + " holds " +
                                   std::to_string(value.size()) + " bytes, expected " +
                                   std::to_string(result.numel() * result.element_size()) +
                                   " (the ranks run different collectives)");
        torch::Tensor part = torch::empty_like(result);
        std::memcpy(part.data_ptr(), value.data(), value.size());
        if (sum_) result.add_(part); else result.copy_(part);
      }
      tensor_.copy_(result);
      // The last rank to read removes the keys.
      if (store_->add(base_ + "/read", 1) == world_size_) {
        for (const std::string& key : keys_) store_->deleteKey(key);
        store_->deleteKey(base_ + "/read");
      }
    } catch (const c10::Error& e) {
      throw store_failure(watch_, what_, e);
    }
    seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    done_ = true;
  }

  std::optional<double> duration_seconds() override {
    return done_ ? std::optional<double>(seconds_) : std::nullopt;
  }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
  std::string base_;
  std::vector<int> sources_;
  bool sum_;
  int world_size_;
  torch::Tensor tensor_;
  WaitWatch watch_;
  std::string what_;
  std::vector<std::string> keys_;
  bool done_ = false;
  double seconds_ = 0.0;
};

void require_cpu(const torch::Tensor& t, const char* op) {
  if (!t.defined() || !t.device().is_cpu())
    throw std::invalid_argument(std::string("store communicator: ") + op + " needs a CPU tensor");
}

}  // namespace

StoreCommunicator::StoreCommunicator(c10::intrusive_ptr<c10d::Store> store, int rank, int world_size,
                                     WaitWatch watch)
    : store_(std::move(store)), rank_(rank), world_size_(world_size), watch_(std::move(watch)) {}

std::shared_ptr<Work> StoreCommunicator::all_reduce_sum(torch::Tensor flat) {
  require_cpu(flat, "all_reduce_sum");
  const std::string base = "collective/" + std::to_string(sequence_);
  const std::string what = "all-reduce #" + std::to_string(sequence_++);
  try {
    store_->set(base + "/" + std::to_string(rank_), bytes_of(flat));
  } catch (const c10::Error& e) {
    throw store_failure(watch_, what, e);
  }
  std::vector<int> sources;
  for (int r = 0; r < world_size_; ++r) sources.push_back(r);
  return std::make_shared<StoreWork>(store_, base, sources, true, world_size_, flat, watch_, what);
}

std::shared_ptr<Work> StoreCommunicator::broadcast(torch::Tensor tensor, int root) {
  require_cpu(tensor, "broadcast");
  if (root < 0 || root >= world_size_)
    throw std::invalid_argument("broadcast: root " + std::to_string(root) + " out of range");
  const std::string base = "collective/" + std::to_string(sequence_);
  const std::string what = "broadcast #" + std::to_string(sequence_++) + " from rank " + std::to_string(root);
  if (rank_ == root) {
    try {
      store_->set(base + "/" + std::to_string(root), bytes_of(tensor));
    } catch (const c10::Error& e) {
      throw store_failure(watch_, what, e);
    }
  }
  return std::make_shared<StoreWork>(store_, base, std::vector<int>{root}, false, world_size_, tensor, watch_,
                                     what);
}

void StoreCommunicator::barrier() { all_reduce_sum(torch::ones({1}))->wait(); }

void StoreCommunicator::finish() {
  barrier();
  depart(*store_, rank_, world_size_, watch_);
}

}  // namespace flashtrain::distributed

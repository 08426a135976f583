// The store communicator over a real TCPStore served in this process, ranks
// as threads: sums equal on every rank, broadcasts, mismatches and a rank
// that never comes. And the small collectives the trainer uses, and the
// Reducer's overlap statistics.
#include "flashtrain/distributed/collectives.h"
#include "fake_communicator.h"
#include "flashtrain/distributed/reducer.h"
#include "flashtrain/distributed/store_communicator.h"

#include <gtest/gtest.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <thread>

namespace fd = flashtrain::distributed;
using namespace std::chrono_literals;

namespace {

// A TCPStore server on a free port, and one client communicator per rank.
struct StoreWorld {
  explicit StoreWorld(int world_size, std::chrono::milliseconds timeout = 10s) {
    c10d::TCPStoreOptions server_options;
    server_options.port = 0;
    server_options.isServer = true;
    server_options.waitWorkers = false;
    server = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", server_options);
    for (int r = 0; r < world_size; ++r) {
      c10d::TCPStoreOptions o;
      o.port = server->getPort();
      o.waitWorkers = false;
      fd::WaitWatch watch;
      watch.rank = r;
      watch.timeout = timeout;
      comms.push_back(std::make_shared<fd::StoreCommunicator>(
          c10::make_intrusive<c10d::TCPStore>("127.0.0.1", o), r, world_size, watch));
    }
  }
  c10::intrusive_ptr<c10d::TCPStore> server;
  std::vector<std::shared_ptr<fd::StoreCommunicator>> comms;
};

// Runs body(rank) on one thread per rank; rethrows the first failure.
template <typename Body>
void on_every_rank(int world_size, Body body) {
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(world_size);
  for (int r = 0; r < world_size; ++r)
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace

TEST(StoreCommunicator, SumsAreBitwiseEqualOnEveryRank) {
  StoreWorld world(3);
  // Inputs made up front: torch's default generator is shared by the threads.
  std::vector<torch::Tensor> results(3);
  torch::manual_seed(0);
  for (auto& r : results) r = torch::randn({1000}, torch::kFloat32);
  const torch::Tensor expected = results[0] + results[1] + results[2];
  on_every_rank(3, [&](int r) {
    torch::Tensor& t = results[r];
    auto work = world.comms[r]->all_reduce_sum(t);  // in flight ...
    work->wait();                                    // ... done
    EXPECT_TRUE(work->is_completed());
    EXPECT_TRUE(work->duration_seconds().has_value());
    // A second collective right after, of another size.
    torch::Tensor small = torch::full({2}, double(r + 1), torch::kDouble);
    world.comms[r]->all_reduce_sum(small)->wait();
    EXPECT_TRUE(torch::equal(small, torch::full({2}, 6.0, torch::kDouble)));
  });
  EXPECT_TRUE(torch::allclose(results[0], expected, 1e-5, 1e-6));
  EXPECT_TRUE(torch::equal(results[0], results[1]));
  EXPECT_TRUE(torch::equal(results[0], results[2]));
}

TEST(StoreCommunicator, BroadcastAndSmallCollectives) {
  StoreWorld world(2);
  on_every_rank(2, [&](int r) {
    fd::Communicator& comm = *world.comms[r];
    torch::Tensor t = torch::full({4}, double(10 + r));
    comm.broadcast(t, 1)->wait();
    EXPECT_TRUE(torch::equal(t, torch::full({4}, 11.0))) << "rank " << r;
    EXPECT_EQ(fd::broadcast_string(comm, r == 0 ? "/ckpt/step_00000006" : "ignored"), "/ckpt/step_00000006");
    EXPECT_EQ(fd::broadcast_string(comm, r == 0 ? "" : "ignored"), "");
    EXPECT_EQ(fd::sum_over_ranks(comm, {1.5, double(r)}), (std::vector<double>{3.0, 1.0}));
    EXPECT_EQ(fd::max_over_ranks(comm, {r == 1 ? 15 : 0, r == 0 ? 1 : 0}), (std::vector<std::int64_t>{15, 1}));
    comm.finish();
  });
}

TEST(StoreCommunicator, MismatchedSizesAreAnError) {
  StoreWorld world(2);
  EXPECT_THROW(on_every_rank(2,
                             [&](int r) {
                               torch::Tensor t = torch::zeros({r == 0 ? 3 : 5});
                               world.comms[r]->all_reduce_sum(t)->wait();
                             }),
               fd::CommunicationError);
}

TEST(StoreCommunicator, RankThatNeverComesTimesOutNamed) {
  StoreWorld world(2, 300ms);
  torch::Tensor t = torch::zeros({3});
  auto work = world.comms[0]->all_reduce_sum(t);
  EXPECT_FALSE(work->is_completed());
  try {
    work->wait();
    FAIL() << "expected a timeout";
  } catch (const fd::CommunicationError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0: all-reduce #0 did not complete within 0.3 s"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(world.comms[0]->all_reduce_sum(torch::Tensor()), std::invalid_argument);
}

namespace {

// Collectives that take 10 ms each and report a 40 ms duration: 3 buckets
// expose 30 ms of 120 ms, so 75% of the communication counts as hidden.
class SlowWork : public fd::Work {
 public:
  void wait() override { std::this_thread::sleep_for(10ms); }
  bool is_completed() override { return true; }
  std::optional<double> duration_seconds() override { return 0.040; }
};
class SlowCommunicator : public fd::SingleProcessCommunicator {
 public:
  int world_size() const override { return 1; }
  std::shared_ptr<fd::Work> all_reduce_sum(torch::Tensor) override { return std::make_shared<SlowWork>(); }
};

}  // namespace

TEST(ReducerStats, MeasureExposedAgainstTotalCommunication) {
  torch::manual_seed(0);
  auto l1 = torch::nn::Linear(4, 8);
  auto l2 = torch::nn::Linear(8, 2);
  std::vector<torch::Tensor> params = {l1->weight, l1->bias, l2->weight, l2->bias};
  fd::Reducer reducer(params, {"l1.weight", "l1.bias", "l2.weight", "l2.bias"}, std::make_shared<SlowCommunicator>(),
                      fd::BucketOptions{200, 8});  // l2.bias | l2.weight, l1.bias | l1.weight
  ASSERT_EQ(reducer.plan().buckets.size(), 3u);
  reducer.zero_grad();
  reducer.prepare_for_backward(false);  // an accumulation micro-step: no communication, no stats
  l2(torch::tanh(l1(torch::randn({3, 4})))).sum().backward();
  reducer.wait_all();
  reducer.prepare_for_backward(true);
  l2(torch::tanh(l1(torch::randn({3, 4})))).sum().backward();
  reducer.wait_all();
  const fd::ReducerStats stats = reducer.take_stats();
  EXPECT_EQ(stats.sync_steps, 1);
  EXPECT_EQ(stats.collectives, 3);
  EXPECT_EQ(stats.timed_collectives, 3);
  EXPECT_NEAR(stats.comm_seconds, 0.120, 1e-9);
  EXPECT_GE(stats.wait_seconds, 0.030);
  EXPECT_EQ(stats.bytes, (32 + 8 + 16 + 2) * 4);
  ASSERT_TRUE(stats.overlap());
  EXPECT_LE(*stats.overlap(), 0.75 + 1e-9);  // at least 30 of 120 ms were waited for
  EXPECT_NEAR(*stats.overlap(), std::max(0.0, 1.0 - stats.wait_seconds / 0.120), 1e-12);
  EXPECT_EQ(reducer.take_stats().sync_steps, 0);  // reset
  EXPECT_FALSE(fd::ReducerStats{}.overlap());
}

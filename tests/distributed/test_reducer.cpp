#include "flashtrain/distributed/communicator.h"
#include "fake_communicator.h"
#include "flashtrain/distributed/reducer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace fd = flashtrain::distributed;

namespace {

// Linear(4,8) -> tanh -> Linear(8,8) -> tanh -> Linear(8,2), float64.
struct Net : torch::nn::Module {
  Net() {
    l1 = register_module("l1", torch::nn::Linear(4, 8));
    l2 = register_module("l2", torch::nn::Linear(8, 8));
    l3 = register_module("l3", torch::nn::Linear(8, 2));
    to(torch::kFloat64);
  }
  torch::Tensor forward(const torch::Tensor& x) {
    return l3(torch::tanh(l2(torch::tanh(l1(x)))));
  }
  torch::nn::Linear l1{nullptr}, l2{nullptr}, l3{nullptr};
};

std::vector<std::string> names_of(Net& net) {
  std::vector<std::string> names;
  for (const auto& item : net.named_parameters()) names.push_back(item.key());
  return names;
}

// Bytes: l3 = 18 doubles (144 B), l2 = 72 (576 B), l1 = 40 (320 B): one bucket
// per layer with a 144 B first bucket and 576 B after it.
const fd::BucketOptions kPerLayer{576, 144};

torch::Tensor batch(int rank, int micro) {
  torch::manual_seed(1000 + 10 * rank + micro);
  return torch::randn({5, 4}, torch::kFloat64);
}

torch::Tensor loss_of(Net& net, const torch::Tensor& x) { return net.forward(x).pow(2).mean(); }

}  // namespace

TEST(Reducer, PlanFollowsRegistrationOrderBackwards) {
  torch::manual_seed(0);
  Net net;
  fd::Reducer reducer(net.parameters(), names_of(net), std::make_shared<fd::SingleProcessCommunicator>(),
                      kPerLayer);
  EXPECT_EQ(fd::describe(reducer.plan(), reducer.specs()),
            "bucket 0: 2 params, 144 bytes: l3.bias, l3.weight\n"
            "bucket 1: 2 params, 576 bytes: l2.bias, l2.weight\n"
            "bucket 2: 2 params, 320 bytes: l1.bias, l1.weight\n");
  // Every .grad is a view into its bucket's buffer.
  auto params = net.parameters();
  for (std::size_t k = 0; k < params.size(); ++k) {
    const auto& plan = reducer.plan();
    const auto& entry = plan.buckets[plan.bucket_of[k]].entries[plan.entry_of[k]];
    const auto& buffer = reducer.bucket_buffer(plan.bucket_of[k]);
    ASSERT_TRUE(params[k].grad().defined());
    EXPECT_EQ(params[k].grad().data_ptr(),
              static_cast<void*>(static_cast<double*>(buffer.data_ptr()) + entry.offset));
    EXPECT_EQ(params[k].grad().sizes(), params[k].sizes());
  }
}

TEST(Reducer, BucketsLaunchDuringBackwardBackToFront) {
  auto world = fd::FakeWorld::create(1);
  torch::manual_seed(0);
  Net net;
  fd::Reducer reducer(net.parameters(), names_of(net), world->communicator(0), kPerLayer);
  // When l1's gradient is computed (last in backward), buckets 0 and 1 must
  // already be in flight: communication overlaps the rest of backward.
  std::vector<std::size_t> launched_when_l1_grad;
  net.l1->weight.register_hook([&](torch::Tensor g) {
    launched_when_l1_grad = reducer.launch_order();
    return g;
  });
  reducer.zero_grad();
  reducer.prepare_for_backward(true);
  loss_of(net, batch(0, 0)).backward();
  EXPECT_EQ(launched_when_l1_grad, (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(reducer.launch_order(), (std::vector<std::size_t>{0, 1, 2}));
  reducer.wait_all();
  auto calls = world->calls(0);
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].op, "all_reduce_sum");
  EXPECT_EQ(calls[0].numel, 18);
  EXPECT_EQ(calls[1].numel, 72);
  EXPECT_EQ(calls[2].numel, 40);
}

namespace {

// When the all-reduces start: from the hooks of the last micro-step's
// backward (waited for by wait_all), or all at once after backwards without
// communication (reduce_all_now, waited for by wait_all_on_device).
enum class Reduce { kDuringBackward, kAfterBackward };

// Runs `micro` micro-steps on `world_size` simulated ranks (one thread, rank
// after rank), then checks that every rank's .grad equals the mean over ranks
// of the summed micro-step gradients computed without any reducer.
void check_mean_over_ranks(int world_size, int micro, Reduce reduce = Reduce::kDuringBackward) {
  auto world = fd::FakeWorld::create(world_size);
  std::vector<std::shared_ptr<Net>> nets;
  std::vector<std::unique_ptr<fd::Reducer>> reducers;
  for (int r = 0; r < world_size; ++r) {
    torch::manual_seed(r);  // different initial weights...
    nets.push_back(std::make_shared<Net>());
    reducers.push_back(std::make_unique<fd::Reducer>(nets[r]->parameters(), names_of(*nets[r]),
                                                     world->communicator(r), kPerLayer));
  }
  // ...made equal by the broadcast from rank 0 (all ranks launch, then wait).
  {
    std::vector<std::shared_ptr<fd::Work>> works;
    torch::NoGradGuard no_grad;
    for (int r = 0; r < world_size; ++r)
      for (auto& p : nets[r]->parameters()) works.push_back(world->communicator(r)->broadcast(p, 0));
    for (auto& w : works) w->wait();
  }
  for (int r = 1; r < world_size; ++r)
    for (std::size_t k = 0; k < nets[0]->parameters().size(); ++k)
      ASSERT_TRUE(torch::equal(nets[r]->parameters()[k], nets[0]->parameters()[k]));
  const std::size_t broadcasts = world->calls(0).size();

  // Reference: plain autograd on a copy of rank 0's weights.
  Net ref;
  {
    torch::NoGradGuard no_grad;
    for (std::size_t k = 0; k < ref.parameters().size(); ++k)
      ref.parameters()[k].copy_(nets[0]->parameters()[k]);
  }
  std::vector<torch::Tensor> expected;
  for (auto& p : ref.parameters()) expected.push_back(torch::zeros_like(p));
  for (int r = 0; r < world_size; ++r) {
    for (auto& p : ref.parameters()) p.mutable_grad() = torch::Tensor();
    for (int m = 0; m < micro; ++m) loss_of(ref, batch(r, m)).backward();
    for (std::size_t k = 0; k < expected.size(); ++k)
      expected[k] += ref.parameters()[k].grad() / world_size;
  }

  for (auto& red : reducers) red->zero_grad();
  for (int m = 0; m < micro; ++m) {
    const bool last = m == micro - 1;
    const bool sync = last && reduce == Reduce::kDuringBackward;
    for (int r = 0; r < world_size; ++r) {
      reducers[r]->prepare_for_backward(sync);
      loss_of(*nets[r], batch(r, m)).backward();
      if (!sync) {
        EXPECT_TRUE(reducers[r]->launch_order().empty());
      }
    }
    // Only the last micro-step communicates.
    EXPECT_EQ(world->calls(0).size(), broadcasts + (sync ? 3 : 0)) << "micro-step " << m;
  }
  if (reduce == Reduce::kAfterBackward) {
    for (auto& red : reducers) red->reduce_all_now();
    EXPECT_EQ(reducers[0]->launch_order(), (std::vector<std::size_t>{0, 1, 2}));
    for (auto& red : reducers) red->wait_all_on_device();
  } else {
    for (auto& red : reducers) red->wait_all();
  }
  for (int r = 0; r < world_size; ++r) {
    EXPECT_EQ(reducers[r]->launches(), 3);
    auto params = nets[r]->parameters();
    for (std::size_t k = 0; k < params.size(); ++k) {
      EXPECT_TRUE(torch::allclose(params[k].grad(), expected[k], 1e-12, 1e-14))
          << "rank " << r << " parameter " << k;
    }
  }
}

}  // namespace

TEST(Reducer, AveragedGradientsAreTheMeanOverRanks) { check_mean_over_ranks(3, 1); }

TEST(Reducer, AccumulationCommunicatesOnlyOnTheLastMicroStep) { check_mean_over_ranks(2, 3); }

TEST(Reducer, RemadeAccumulatorsKeepTheHooks) {
  auto world = fd::FakeWorld::create(1);
  torch::manual_seed(0);
  Net net;
  fd::Reducer reducer(net.parameters(), names_of(net), world->communicator(0), kPerLayer);
  reducer.accumulate_on_current_stream();
  reducer.zero_grad();
  reducer.prepare_for_backward(true);
  loss_of(net, batch(0, 0)).backward();
  EXPECT_EQ(reducer.launch_order(), (std::vector<std::size_t>{0, 1, 2}));
  reducer.wait_all();
  // An autograd graph alive across the call keeps the old accumulators: refused.
  const torch::Tensor pending = loss_of(net, batch(0, 1));
  EXPECT_THROW(reducer.accumulate_on_current_stream(), std::logic_error);
}

TEST(Reducer, ReducingAllAfterUnsyncedBackwardsGivesTheSameMean) {
  check_mean_over_ranks(2, 3, Reduce::kAfterBackward);
}

TEST(Reducer, ZeroGradAndOptimizerStepKeepViews) {
  torch::manual_seed(0);
  Net net;
  fd::Reducer reducer(net.parameters(), names_of(net), std::make_shared<fd::SingleProcessCommunicator>(),
                      kPerLayer);
  torch::optim::SGD opt(net.parameters(), 0.1);
  for (int step = 0; step < 2; ++step) {
    reducer.zero_grad();
    reducer.prepare_for_backward(true);
    loss_of(net, batch(0, step)).backward();
    reducer.wait_all();
    opt.step();
  }
  // libtorch's optimizer.zero_grad() cannot detach view gradients (it throws,
  // as for DDP's gradient_as_bucket_view): use reducer.zero_grad(). A .grad
  // dropped by hand is pointed back into the bucket by the next prepare.
  EXPECT_THROW(opt.zero_grad(), c10::Error);
  for (auto& p : net.parameters()) p.mutable_grad() = torch::Tensor();
  reducer.prepare_for_backward(true);
  loss_of(net, batch(0, 9)).backward();
  reducer.wait_all();
  const auto& plan = reducer.plan();
  auto w = net.l3->weight;
  EXPECT_EQ(w.grad().data_ptr(),
            reducer.bucket_buffer(plan.bucket_of[4]).data_ptr<double>() +
                plan.buckets[plan.bucket_of[4]].entries[plan.entry_of[4]].offset);
  EXPECT_GT(w.grad().abs().sum().item<double>(), 0.0);
}

TEST(Reducer, ParameterWithoutGradientIsNamed) {
  torch::manual_seed(0);
  Net net;
  fd::Reducer reducer(net.parameters(), names_of(net), std::make_shared<fd::SingleProcessCommunicator>(),
                      kPerLayer);
  reducer.prepare_for_backward(true);
  // l1 is not used: bucket 2 never fills.
  net.l3(torch::tanh(net.l2(torch::randn({2, 8}, torch::kFloat64)))).sum().backward();
  try {
    reducer.wait_all();
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("bucket 2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("l1.weight"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("l2."), std::string::npos) << msg;
  }
}

TEST(FakeCommunicator, MismatchAndTimeoutAreErrors) {
  auto world = fd::FakeWorld::create(2, std::chrono::milliseconds(50));
  auto a = torch::zeros({3});
  auto b = torch::zeros({4});
  world->communicator(0)->all_reduce_sum(a);
  EXPECT_THROW(world->communicator(1)->all_reduce_sum(b), std::runtime_error);

  auto world2 = fd::FakeWorld::create(2, std::chrono::milliseconds(50));
  auto work = world2->communicator(0)->all_reduce_sum(a);
  EXPECT_FALSE(work->is_completed());
  try {
    work->wait();
    FAIL() << "expected a timeout";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("not launched by rank(s) 1"), std::string::npos)
        << e.what();
  }
}

TEST(FakeCommunicator, SumsAndBroadcasts) {
  auto world = fd::FakeWorld::create(3);
  std::vector<torch::Tensor> t{torch::full({2}, 1.0), torch::full({2}, 2.0), torch::full({2}, 4.0)};
  std::vector<std::shared_ptr<fd::Work>> works;
  for (int r = 0; r < 3; ++r) works.push_back(world->communicator(r)->all_reduce_sum(t[r]));
  for (auto& w : works) w->wait();
  for (auto& x : t) EXPECT_TRUE(torch::equal(x, torch::full({2}, 7.0)));
  std::vector<torch::Tensor> u{torch::full({2}, 1.0), torch::full({2}, 2.0), torch::full({2}, 3.0)};
  works.clear();
  for (int r = 0; r < 3; ++r) works.push_back(world->communicator(r)->broadcast(u[r], 2));
  for (auto& w : works) w->wait();
  for (auto& x : u) EXPECT_TRUE(torch::equal(x, torch::full({2}, 3.0)));
  EXPECT_EQ(world->calls(1).size(), 2u);
  EXPECT_EQ(world->calls(1)[1].op, "broadcast");
  EXPECT_EQ(world->calls(1)[1].root, 2);
}

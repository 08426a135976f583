// Every GPU backend against the float64 vanilla backend over random cases
// (the backends' suite): odd batch sizes, lengths up to 8192, 1–12 heads, head
// dims 16–768, every cell and dtype, forward and every gradient. The caching
// allocator's memory is poisoned (NaN) before each run, so an output element a
// kernel fails to write shows up. Skipped without a GPU.
#include <functional>
#include <gtest/gtest.h>

#include <random>

#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "backend_choice.h"
#include "cells/registry.h"
#include "flashrnn/tune/device_query.h"
#include "flashrnn/tune/tc_model.h"
#include "fused/fused_backend.h"
#include "fused/tc_selection.h"
#include "fused/tc_tiling.h"
#include "option_checks.h"
#include "reference.h"

namespace flashrnn::testing {
namespace {

struct RandomCase {
  Cell cell;
  torch::Dtype dtype;
  int64_t B, T, N, D;
  bool with_reset;
};

std::string describe(const RandomCase& c) {
  std::ostringstream s;
  s << to_string(c.cell) << " " << c.dtype << " B=" << c.B << " T=" << c.T << " N=" << c.N
    << " D=" << c.D << (c.with_reset ? " reset" : "");
  return s.str();
}

// The tiling the tensor-core kernels are compiled with for a cell's head of
// `d` dims on devices with or without clusters; null where they have none.
const fused::TcTilingRow* compiled_tiling(Cell cell, int64_t d, bool clusters) {
  const tune::Cell tuned = fused::tuner_cell(cell);
  return fused::tc_tiling_row(tune::cell_gates(tuned), tune::cell_states(tuned), tune::cell_cache(tuned), int(d),
                              clusters);
}

// Deterministic cases; the B·T·N·D budget keeps the float64 reference affordable.
std::vector<RandomCase> random_cases(int count, uint32_t seed) {
  std::mt19937 rng(seed);
  const auto& cell_choices = cells::kAllCells;
  const torch::Dtype dtypes[] = {torch::kBFloat16, torch::kHalf, torch::kFloat};
  const int64_t lengths[] = {1, 2, 3, 17, 256, 1024, 8192};
  const int64_t heads[] = {1, 3, 12};
  const int64_t dims[] = {16, 32, 48, 64, 96, 128, 256, 768};
  const auto pick = [&](const auto& options) {
    return options[std::uniform_int_distribution<size_t>(0, std::size(options) - 1)(rng)];
  };
  std::vector<RandomCase> cases;
  while (int(cases.size()) < count) {
    RandomCase c{pick(cell_choices), pick(dtypes), std::uniform_int_distribution<int64_t>(1, 67)(rng),
                 pick(lengths), pick(heads), pick(dims), rng() % 4 == 0};
    if (c.B * c.T * c.N * c.D <= (int64_t(1) << 23)) cases.push_back(c);
  }
  return cases;
}

// Fill the allocator's free memory with 0xFF (NaN in every float format).
void poison_allocator() {
  std::vector<torch::Tensor> blocks;
  blocks.push_back(torch::full({int64_t(1) << 28}, -1, torch::dtype(torch::kInt).device(torch::kCUDA)));
  for (int i = 0; i < 64; ++i)
    blocks.push_back(torch::full({1 << 17}, -1, torch::dtype(torch::kInt).device(torch::kCUDA)));
}

int64_t allocated_bytes() {
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(c10::cuda::current_device());
  return stats.allocated_bytes[size_t(c10::CachingAllocator::StatType::AGGREGATE)].current;
}

// Relative error bounds per dtype, the forward's and the gradients': a few
// dozen roundings of the dtype (unit roundoff 2^-24 float32, 2^-11 half, 2^-8
// bfloat16) over the steps and the matmul sums, with room for long sequences.
double tolerance(torch::Dtype dtype) {
  return dtype == torch::kFloat ? 1e-4 : dtype == torch::kHalf ? 1e-2 : 3e-2;
}

class BackendsCudaTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  }
};

// Runs case c on `backend` and on the float64 reference (same options, after
// `configure`), checks the forward and every gradient; false when the backend
// does not take the case (it must say so by naming the head dimension).
bool matches_float64(const RandomCase& c, Backend backend,
                     const std::function<void(Options&)>& configure = {}) {
  SCOPED_TRACE(describe(c));
  OpInputs ref = random_inputs(c.cell, c.B, c.T, c.N, c.D, torch::kDouble, true, torch::kCUDA);
  if (c.with_reset)
    ref.options.reset_mask = torch::rand({c.B, c.T}, torch::kCUDA) < 0.05;
  if (configure) configure(ref.options);
  OpInputs ours = ref;
  ours.options.backend = backend;
  for (torch::Tensor* t : {&ours.wx, &ours.r, &ours.b, &ours.initial})
    *t = t->to(c.dtype).requires_grad_(true);
  // The reference sees the rounded inputs.
  for (auto [o, r] : {std::pair{&ours.wx, &ref.wx}, {&ours.r, &ref.r}, {&ours.b, &ref.b},
                      {&ours.initial, &ref.initial}})
    *r = o->detach().to(torch::kDouble).requires_grad_(true);

  poison_allocator();
  Result got;
  try {
    got = ours.run();
  } catch (const InputError& e) {  // a shape this backend does not take (auto falls back)
    EXPECT_NE(std::string(e.what()).find("cannot run head dimension"), std::string::npos)
        << e.what();
    return false;
  }
  const Result want = ref.run();
  const torch::Tensor w = torch::randn_like(want.states_all);
  (got.states_all.to(torch::kDouble) * w).sum().backward();
  (want.states_all * w).sum().backward();

  const double tol = tolerance(c.dtype);
  EXPECT_TRUE(torch::isfinite(got.states_all).all().item<bool>());
  EXPECT_LT(relative_error(got.states_all, want.states_all), tol);
  EXPECT_LT(relative_error(got.last_states, want.last_states), tol);
  for (auto [o, r, name] : {std::tuple{&ours.wx, &ref.wx, "dWx"}, {&ours.r, &ref.r, "dR"},
                            {&ours.b, &ref.b, "db"}, {&ours.initial, &ref.initial, "dS0"}}) {
    EXPECT_TRUE(o->grad().defined()) << name;
    if (!o->grad().defined()) continue;
    EXPECT_EQ(o->grad().scalar_type(), c.dtype) << name;
    EXPECT_LT(relative_error(o->grad(), r->grad()), 2 * tol) << name;
  }
  return true;
}

TEST_P(BackendsCudaTest, MatchFloat64OverRandomCases) {
  torch::manual_seed(60);
  int checked = 0;
  for (const RandomCase& c : random_cases(210, 2026)) checked += matches_float64(c, GetParam());
  // Alternating takes every case; fused the head dims 16…256 that divide 256.
  EXPECT_GE(checked, GetParam() == Backend::kAlternating ? 200 : 100);
}

// The tensor-core kernels: every cell, bf16 and fp16, every compiled head dim
// (tc_tiling.h; above 128 a cluster of CTAs per head), a partial batch tile,
// resets, and each gradient/forward option in turn. Each case is first checked
// to be one the tuner runs on the tensor-core kernels on this GPU (the same
// decision the fused backend takes), so none passes on another kernel.
TEST(FusedCuda, TensorCoreKernelsMatchFloat64EveryCellAndHeadDim) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  torch::manual_seed(63);
  const tune::DeviceProps device = tune::query_cuda_device(c10::cuda::current_device());
  const std::function<void(Options&)> variants[] = {
      {}, [](Options& o) { o.gradient_recurrent_clip = 0.05; },
      [](Options& o) { o.gradient_recurrent_cut = true; }, [](Options& o) { o.forward_clip = 0.5; }};
  int i = 0, checked = 0;
  for (Cell cell : cells::kAllCells)
    for (torch::Dtype dtype : {torch::kBFloat16, torch::kHalf})
      for (int64_t d : fused::kTcHeadDims) {
        const RandomCase c{cell, dtype, 19, 70, 2, d, true};
        const tune::TcSelection s = tune::select_tc_config(
            device, tune::FusedShape{fused::tuner_cell(cell), 2, int(d), 19,
                                     dtype == torch::kHalf ? tune::DType::kFp16 : tune::DType::kBf16});
        // What the kernels are compiled for on this device (tc_tiling.h): a
        // cluster that splits the head, and R within the register cap (GRU to
        // 160) or, for LSTM and sLSTM heads over 256 dims, partly in shared
        // memory (WideHeadsRunTheTensorCoreKernels); the tuner may refuse more
        // only for shared memory (A100).
        const bool compiled = compiled_tiling(cell, d, device.has_clusters()) != nullptr;
        if (!s.config || !s.config->backward) {
          EXPECT_TRUE(!compiled || !device.has_clusters())
              << describe(c) << ": " << s.reason;
          continue;
        }
        EXPECT_TRUE(compiled) << describe(c);
        EXPECT_TRUE(matches_float64(c, Backend::kFused, variants[i++ % 4])) << describe(c);
        ++checked;
      }
  EXPECT_GE(checked, device.has_clusters() ? 100 : 36);
}

// A head split over a cluster through a long sequence, in both storage types.
TEST(FusedCuda, ClusterSplitHeadsMatchFloat64OverLongSequences) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  if (!tune::query_cuda_device(c10::cuda::current_device()).has_clusters())
    GTEST_SKIP() << "thread-block clusters need sm_90";
  torch::manual_seed(65);
  EXPECT_TRUE(matches_float64({Cell::kLstm, torch::kBFloat16, 5, 2048, 2, 256, false}, Backend::kFused));
  EXPECT_TRUE(matches_float64({Cell::kSlstm, torch::kHalf, 33, 512, 1, 192, true}, Backend::kFused));
}

// Short enough for compute-sanitizer's racecheck: every cell split over a
// cluster (8, 5, 3 and 2 CTAs), a partial batch tile, resets; and wide heads
// whose backward streams Rᵀ (768: 16 CTAs; LSTM beside two stages, sLSTM
// beside one) or keeps it resident (320: 10).
TEST(FusedCuda, ClusterSplitHeadsShortSequences) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  if (!tune::query_cuda_device(c10::cuda::current_device()).has_clusters())
    GTEST_SKIP() << "thread-block clusters need sm_90";
  torch::manual_seed(66);
  EXPECT_TRUE(matches_float64({Cell::kLstm, torch::kBFloat16, 17, 6, 1, 256, true}, Backend::kFused));
  EXPECT_TRUE(matches_float64({Cell::kSlstm, torch::kBFloat16, 3, 5, 2, 160, true}, Backend::kFused));
  EXPECT_TRUE(matches_float64({Cell::kGru, torch::kHalf, 9, 4, 1, 144, true}, Backend::kFused));
  EXPECT_TRUE(matches_float64({Cell::kElman, torch::kHalf, 20, 7, 1, 256, false}, Backend::kFused));
  if (tune::query_cuda_device(c10::cuda::current_device()).smem_per_block_optin >= fused::kTcSmemBudget) {
    EXPECT_TRUE(matches_float64({Cell::kLstm, torch::kBFloat16, 18, 5, 1, 768, true}, Backend::kFused));
    EXPECT_TRUE(matches_float64({Cell::kSlstm, torch::kHalf, 7, 4, 1, 320, false}, Backend::kFused));
    EXPECT_TRUE(matches_float64({Cell::kSlstm, torch::kBFloat16, 3, 6, 1, 768, false}, Backend::kFused));
  }
}

// Without autograd recording the call (no_grad, or no input requiring a
// gradient) the tensor-core kernels write only the output: the same output.
// 32 dims are one CTA per head; 64 a cluster of 2 on sm_90, whose LSTM and
// sLSTM forwards store through the save tiles (the inference forward's hold
// the states only), with a partial second batch tile.
TEST(FusedCuda, ForwardWithoutAutogradMatchesForwardWithIt) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  torch::manual_seed(64);
  for (int64_t d : {32, 64})
    for (Cell cell : cells::kAllCells)
      for (bool with_reset : {false, true}) {
        SCOPED_TRACE(std::string(to_string(cell)) + " D=" + std::to_string(d) +
                     (with_reset ? " with resets" : ""));
        OpInputs in = random_inputs(cell, 21, 40, 3, d, torch::kBFloat16, true, torch::kCUDA);
        if (with_reset) in.options.reset_mask = torch::rand({21, 40}, torch::kCUDA) < 0.1;
        in.options.backend = Backend::kFused;
        for (torch::Tensor* t : {&in.wx, &in.r, &in.b, &in.initial}) *t = t->to(torch::kBFloat16);
        const Result plain = in.run();  // nothing requires a gradient
        for (torch::Tensor* t : {&in.wx, &in.r, &in.b, &in.initial}) t->requires_grad_(true);
        const Result recorded = in.run();
        Result no_grad;
        {
          torch::NoGradGuard guard;
          no_grad = in.run();
        }
        EXPECT_TRUE(recorded.states_all.requires_grad());
        EXPECT_TRUE(plain.states_all.equal(recorded.states_all.detach())) << to_string(cell);
        EXPECT_TRUE(no_grad.states_all.equal(recorded.states_all.detach())) << to_string(cell);
        EXPECT_TRUE(no_grad.last_states.equal(recorded.last_states.detach())) << to_string(cell);
      }
}

// Options::recompute: the backward runs the forward again (for the tensor-core
// kernels: the training forward after the inference one) and gets the same
// gradients, bit for bit, as from the kept buffers.
TEST_P(BackendsCudaTest, RecomputeGivesTheSameGradients) {
  torch::manual_seed(65);
  for (Cell cell : cells::kAllCells) {
    SCOPED_TRACE(std::string(to_string(cell)));
    OpInputs in = random_inputs(cell, 21, 40, 3, 64, torch::kBFloat16, true, torch::kCUDA);
    in.options.backend = GetParam();
    for (torch::Tensor* t : {&in.wx, &in.r, &in.b, &in.initial}) *t = t->to(torch::kBFloat16);
    const torch::Tensor w = torch::randn({cell_layout(cell).states, 21, 40, 3, 64}, torch::kCUDA);
    std::vector<torch::Tensor> grads[2];
    int64_t held_after_forward[2];
    for (bool recompute : {false, true}) {
      OpInputs c = in;
      c.options.recompute = recompute;
      for (torch::Tensor* t : {&c.wx, &c.r, &c.b, &c.initial}) *t = t->detach().clone().requires_grad_(true);
      const int64_t before = allocated_bytes();
      const Result r = c.run();
      held_after_forward[recompute] = allocated_bytes() - before;
      (r.states_all.to(torch::kFloat) * w).sum().backward();
      grads[recompute] = {r.states_all.detach(), c.wx.grad(), c.r.grad(), c.b.grad(), c.initial.grad()};
    }
    for (int i = 0; i < 5; ++i) EXPECT_TRUE(grads[0][i].equal(grads[1][i])) << "output " << i;
    // What the forward leaves for the backward: without the float32 per-step
    // states and gate values, at least their [T, B, R + C, N, D] (R the states
    // the backward reads, C the cache).
    const int64_t kept_slots = saved_states(cell).count + cache_slots(cell);
    const int64_t per_step_bytes = int64_t(40) * 21 * kept_slots * 3 * 64 * 4;
    EXPECT_LE(held_after_forward[1] + per_step_bytes, held_after_forward[0]);
  }
}

// output_h_only on the GPU backends: the same h, last states and gradients,
// bit for bit, on each path of the tensor-core kernels (a head of one CTA, 32
// dims; a head split over a cluster, whose saves go through the save tiles,
// 64 dims, with resets; a wide LSTM or sLSTM head, 288 dims, whose backward is
// the alternating one), and the other states' outputs not allocated.
TEST_P(BackendsCudaTest, HOnlyOutputGivesTheSameResultsInLessMemory) {
  torch::manual_seed(67);
  const int64_t B = 19, T = 33, N = 2;
  for (Cell cell : cells::kAllCells)
    for (int64_t d : {32, 64, 288}) {
      if (d > 256 && cell_layout(cell).gates % 2 == 1) continue;  // GRU, Elman: no fused kernel that wide
      const std::string what = std::string(to_string(cell)) + " D=" + std::to_string(d);
      OpInputs in = random_inputs(cell, B, T, N, d, torch::kBFloat16, true, torch::kCUDA);
      in.options.backend = GetParam();
      if (d == 64) in.options.reset_mask = torch::rand({B, T}, torch::kCUDA) < 0.1;
      expect_h_only_output_changes_nothing(in, what);
      int64_t held[2];
      for (bool h_only : {false, true}) {
        OpInputs c = in;
        c.options.output_h_only = h_only;
        c.wx = c.wx.detach().clone().requires_grad_(true);
        const int64_t before = allocated_bytes();
        const Result r = c.run();
        held[h_only] = allocated_bytes() - before;
      }
      const int64_t other_states_bytes = (cell_layout(cell).states - 1) * B * T * N * d * 2;
      EXPECT_GE(held[0] - held[1], other_states_bytes - 512) << what;  // (the allocator rounds to 512 bytes)
    }
}

// auto's choice (backend_choice.h): the tensor-core kernels wherever they run,
// the FMA fused kernels on float32 heads of at most 16 dims, else alternating.
TEST(BackendChoiceCuda, AutoPicksTheFmaKernelsOnlyForTheSmallestFloat32Heads) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const auto choice = [](Cell cell, torch::Dtype dtype, int64_t d) {
    const OpInputs in = random_inputs(cell, 3, 5, 2, d, dtype, false, torch::kCUDA);
    return resolve_backend(Backend::kAuto, cell, Inputs{in.wx, in.r, in.b, {}, {}});
  };
  for (Cell cell : cells::kAllCells) {
    SCOPED_TRACE(std::string(to_string(cell)));
    EXPECT_EQ(choice(cell, torch::kFloat, fused::kFmaAutoMaxHeadDim), Backend::kFused);
    EXPECT_EQ(choice(cell, torch::kFloat, 32), Backend::kAlternating);
    EXPECT_EQ(choice(cell, torch::kBFloat16, 64), Backend::kFused);  // the tensor-core kernels
  }
}

// LSTM and sLSTM heads over 256 dims, whose R does not fit the registers, run
// a tensor-core forward with R partly in shared memory (and clusters of up to
// 16 CTAs): every compiled head dim against float64 without autograd, two
// with it (their backward is the alternating backend's).
TEST(FusedCuda, WideHeadsRunTheTensorCoreKernels) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const tune::DeviceProps device = tune::query_cuda_device(c10::cuda::current_device());
  if (!device.has_clusters()) GTEST_SKIP() << "heads over 256 dims need sm_90's clusters";
  torch::manual_seed(66);
  int checked = 0, i = 0;
  for (Cell cell : {Cell::kLstm, Cell::kSlstm})
    for (int64_t d : fused::kTcHeadDims) {
      if (d <= 256) continue;
      const torch::Dtype dtype = i % 2 ? torch::kHalf : torch::kBFloat16;
      const RandomCase c{cell, dtype, i % 3 ? 19 : 3, i % 4 ? 41 : 300, 1, d, i % 2 == 0};
      ++i;
      SCOPED_TRACE(describe(c));
      const tune::TcSelection s = tune::select_tc_config(
          device, tune::FusedShape{fused::tuner_cell(cell), 1, int(d), int(c.B),
                                   dtype == torch::kHalf ? tune::DType::kFp16 : tune::DType::kBf16});
      ASSERT_TRUE(s.config) << s.reason;
      EXPECT_TRUE(s.config->backward);  // Rᵀ partly in shared memory (TcBackward)
      const fused::TcTilingRow* compiled = compiled_tiling(cell, d, true);
      ASSERT_TRUE(compiled);
      EXPECT_EQ(s.config->cluster, compiled->cluster);
      EXPECT_EQ(s.config->r_shared_ktiles, compiled->r_shared_ktiles);  // > 0 from 416 dims
      OpInputs ref = random_inputs(cell, c.B, c.T, 1, d, torch::kDouble, true, torch::kCUDA);
      if (c.with_reset) ref.options.reset_mask = torch::rand({c.B, c.T}, torch::kCUDA) < 0.05;
      OpInputs ours = ref;
      ours.options.backend = Backend::kFused;
      for (auto [o, r] : {std::pair{&ours.wx, &ref.wx}, {&ours.r, &ref.r}, {&ours.b, &ref.b},
                          {&ours.initial, &ref.initial}}) {
        *o = o->to(dtype);
        *r = o->to(torch::kDouble);  // the reference sees the rounded inputs
      }
      poison_allocator();
      const Result got = ours.run();  // nothing requires a gradient
      const Result want = ref.run();
      EXPECT_TRUE(torch::isfinite(got.states_all).all().item<bool>());
      EXPECT_LT(relative_error(got.states_all, want.states_all), tolerance(dtype));
      EXPECT_LT(relative_error(got.last_states, want.last_states), tolerance(dtype));
      ++checked;
    }
  EXPECT_EQ(checked, 24);  // 12 head dims over 256 per cell (tc_constants.h)

  // With autograd: the tensor-core recording forward and backward, Rᵀ's
  // shared slices streamed through the ring (768: 12 slices a step through 3
  // slots, 300 steps) or resident (384), with every gradient option.
  EXPECT_TRUE(matches_float64({Cell::kLstm, torch::kBFloat16, 5, 300, 1, 768, true}, Backend::kFused));
  EXPECT_TRUE(matches_float64({Cell::kSlstm, torch::kHalf, 19, 17, 2, 384, false}, Backend::kFused));
  EXPECT_TRUE(matches_float64({Cell::kSlstm, torch::kBFloat16, 17, 40, 1, 768, false}, Backend::kFused,
                              [](Options& o) { o.gradient_recurrent_clip = 0.05; }));
  // Nothing goes back through R: the producer streams nothing, the kernel ends.
  EXPECT_TRUE(matches_float64({Cell::kLstm, torch::kHalf, 3, 25, 1, 640, true}, Backend::kFused,
                              [](Options& o) { o.gradient_recurrent_cut = true; }));
}

TEST_P(BackendsCudaTest, RunsUnderCudaGraphCapture) {
  torch::manual_seed(61);
  OpInputs in = random_inputs(Cell::kLstm, 5, 33, 3, 32, torch::kBFloat16, true, torch::kCUDA);
  in.options.backend = GetParam();
  const torch::Tensor expected = in.run().states_all.clone();

  // Capture the op itself into a graph, change the inputs in place, replay.
  at::cuda::CUDAGraph graph;
  const auto stream = c10::cuda::getStreamFromPool();
  torch::Tensor captured;
  {
    const c10::cuda::CUDAStreamGuard guard(stream);
    graph.capture_begin();
    captured = in.run().states_all;
    graph.capture_end();
  }
  graph.replay();
  torch::cuda::synchronize();
  EXPECT_TRUE(captured.equal(expected));
  in.wx.mul_(0.5);
  OpInputs eager = in;
  graph.replay();
  torch::cuda::synchronize();
  EXPECT_TRUE(captured.equal(eager.run().states_all));
}

TEST(AlternatingCuda, RepeatedCallsReuseTheGraphWithNewTensors) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  torch::manual_seed(62);
  for (int call = 0; call < 3; ++call) {  // same shape: one captured graph, new tensors each time
    OpInputs in = random_inputs(Cell::kGru, 4, 65, 2, 48, torch::kFloat, true, torch::kCUDA);
    OpInputs ref = in;
    in.options.backend = Backend::kAlternating;
    ref.options.backend = Backend::kVanilla;
    EXPECT_LT(relative_error(in.run().states_all, ref.run().states_all), 1e-5) << call;
  }
}

INSTANTIATE_TEST_SUITE_P(GpuBackends, BackendsCudaTest,
                         ::testing::Values(Backend::kAlternating, Backend::kFused),
                         [](const auto& info) { return std::string(to_string(info.param)); });

}  // namespace
}  // namespace flashrnn::testing

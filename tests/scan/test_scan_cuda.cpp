// The cuda backend against the float64 loops of scan_reference.h, forward and
// backward, over random shapes, every dtype, both layouts, with and without x0,
// both directions, and sequences up to 2^20 steps with few channels. Every
// fresh allocation is NaN-filled during these tests, so an output element the
// kernels never write fails the comparison. Skipped without a CUDA device.
#include <gtest/gtest.h>

#include <random>

#include <ATen/Context.h>

#include "scan_reference.h"

namespace flashrnn::scan_testing {
namespace {

// NaN-fills uninitialised memory (at::empty) while alive.
class PoisonFreshMemory {
 public:
  PoisonFreshMemory()
      : algorithms_(at::globalContext().deterministicAlgorithms()),
        warn_only_(at::globalContext().deterministicAlgorithmsWarnOnly()),
        fill_(at::globalContext().deterministicFillUninitializedMemory()) {
    at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/true);
    at::globalContext().setDeterministicFillUninitializedMemory(true);
  }
  ~PoisonFreshMemory() {
    at::globalContext().setDeterministicAlgorithms(algorithms_, warn_only_);
    at::globalContext().setDeterministicFillUninitializedMemory(fill_);
  }

 private:
  bool algorithms_, warn_only_, fill_;
};

class ScanCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  }
  PoisonFreshMemory poison_;
};

double tolerance_of(torch::Dtype dtype) {
  switch (dtype) {
    case torch::kBFloat16: return 1e-2;
    case torch::kHalf: return 2e-3;
    default: return 1e-5;
  }
}

std::string name_of(const ScanCase& c, torch::Dtype dtype) {
  return std::string(to_string(c.layout)) + " " + c10::toString(dtype) +
         " B=" + std::to_string(c.batch) + " D=" + std::to_string(c.channels) +
         " T=" + std::to_string(c.steps) + (c.reverse ? " reverse" : "") +
         (c.with_x0 ? " x0" : "");
}

// Forward and backward of one case on the GPU against the float64 loops on the
// same (rounded) inputs. `offset` > 0 shifts every input's data pointer by that
// many elements, so 16-byte accesses are not allowed.
void check_case(const ScanCase& c, torch::Dtype dtype, double gate_lo, double gate_hi,
                double tolerance, int64_t offset = 0) {
  SCOPED_TRACE(name_of(c, dtype) + (offset ? " misaligned" : ""));
  const auto gpu = torch::TensorOptions().device(torch::kCUDA).dtype(dtype);
  // A differentiable input on the GPU: a leaf, or a view `offset` elements into one.
  const auto input = [&](const torch::Tensor& t) {
    if (!t.defined()) return t;
    if (offset == 0) return t.to(gpu).requires_grad_(true);
    torch::Tensor storage = torch::empty({t.numel() + offset}, gpu);
    storage.narrow(0, offset, t.numel()).copy_(t.reshape(-1));
    storage.requires_grad_(true);
    return storage.narrow(0, offset, t.numel()).view(t.sizes());
  };
  const Inputs in64 = random_inputs(c, gate_lo, gate_hi);
  const Inputs in{input(in64.a), input(in64.b), input(in64.x0)};
  const torch::Tensor wx = torch::randn(sizes_of(c), torch::kDouble).to(gpu);
  const torch::Tensor wl = torch::randn({c.batch, c.channels}, torch::kDouble).to(gpu);

  const ScanResult out = scan(in.a, in.b, in.options(c, ScanBackend::kCuda));
  ASSERT_EQ(out.x.scalar_type(), dtype);
  std::vector<torch::Tensor> wrt = {in.a, in.b};
  if (c.with_x0) wrt.push_back(in.x0);
  const std::vector<torch::Tensor> grads = torch::autograd::grad({out.x, out.last}, wrt, {wx, wl});

  const ForwardRef ref = reference_forward(c, in.a.detach(), in.b.detach(),
                                           c.with_x0 ? in.x0.detach() : torch::Tensor());
  EXPECT_LT(relative_error(out.x.detach(), ref.x), tolerance);
  EXPECT_LT(relative_error(out.last.detach(), ref.last), tolerance);
  // The backward reads the op's own stored x, as the reference does here.
  const GradientsRef g = reference_backward(c, in.a.detach(), out.x.detach(),
                                            c.with_x0 ? in.x0.detach() : torch::Tensor(), wx, wl);
  EXPECT_LT(relative_error(grads[0], g.da), tolerance);
  EXPECT_LT(relative_error(grads[1], g.db), tolerance);
  if (c.with_x0) {
    EXPECT_LT(relative_error(grads[2], g.dx0), tolerance);
  }
}

ScanCase make_case(int64_t batch, int64_t channels, int64_t steps, ScanLayout layout,
                   bool reverse, bool with_x0) {
  ScanCase c;
  c.batch = batch;
  c.channels = channels;
  c.steps = steps;
  c.layout = layout;
  c.reverse = reverse;
  c.with_x0 = with_x0;
  return c;
}

// Small shapes over every code path: single and chained tiles, vector and
// scalar accesses, partial tiles, several channels per warp. Also what the
// GPU job runs under compute-sanitizer.
TEST_F(ScanCuda, SmallShapesEveryPath) {
  torch::manual_seed(21);
  for (torch::Dtype dtype : {torch::kFloat, torch::kBFloat16, torch::kHalf})
    for (ScanLayout layout : {ScanLayout::kBDT, ScanLayout::kBTD})
      for (bool reverse : {false, true})
        for (const auto& [b, d, t] : std::vector<std::tuple<int, int, int>>{
                 {1, 1, 1}, {2, 3, 7}, {1, 8, 64}, {2, 6, 300}, {1, 5, 5003}, {3, 130, 40}})
          check_case(make_case(b, d, t, layout, reverse, (b + t) % 2 == 0), dtype, -1.0, 1.0,
                     tolerance_of(dtype));
}

TEST_F(ScanCuda, RandomShapes) {
  std::mt19937 rng(22);
  torch::manual_seed(22);
  const std::vector<int64_t> lengths = {1, 2, 3, 31, 255, 1000, 4095, 4096, 4097, 8193, 20001};
  const std::vector<torch::Dtype> dtypes = {torch::kFloat, torch::kBFloat16, torch::kHalf};
  for (int i = 0; i < 60; ++i) {
    const int64_t steps = lengths[rng() % lengths.size()];
    const int64_t batch = 1 + rng() % 3;
    const int64_t channels = 1 + rng() % std::max<int64_t>(1, std::min<int64_t>(600, 2000000 / (steps * batch)));
    const torch::Dtype dtype = dtypes[rng() % dtypes.size()];
    const ScanCase c = make_case(batch, channels, steps,
                                 rng() % 2 ? ScanLayout::kBTD : ScanLayout::kBDT, rng() % 2,
                                 rng() % 2);
    check_case(c, dtype, 0.5, 1.0, tolerance_of(dtype));
  }
}

// Data pointers off the 16-byte grid take the scalar path.
TEST_F(ScanCuda, MisalignedTensors) {
  torch::manual_seed(23);
  for (ScanLayout layout : {ScanLayout::kBDT, ScanLayout::kBTD})
    check_case(make_case(2, 64, 4096, layout, false, true), torch::kFloat, 0.5, 1.0,
               tolerance_of(torch::kFloat), /*offset=*/1);
}

// Few channels, long sequences: long look-back chains, gates near 1 so the
// state carries across many tiles.
TEST_F(ScanCuda, LongSequencesFewChannels) {
  torch::manual_seed(24);
  const int64_t n = int64_t(1) << 20;
  check_case(make_case(2, 8, n, ScanLayout::kBDT, false, true), torch::kFloat, 0.999, 1.0, 2e-5);
  check_case(make_case(2, 8, n, ScanLayout::kBTD, true, true), torch::kFloat, 0.999, 1.0, 2e-5);
  check_case(make_case(1, 3, n - 3, ScanLayout::kBDT, true, false), torch::kBFloat16, 0.99, 1.0,
             tolerance_of(torch::kBFloat16));
  check_case(make_case(1, 5, n / 2 + 1, ScanLayout::kBTD, false, true), torch::kHalf, 0.99, 1.0,
             tolerance_of(torch::kHalf));
}

// Enough [B, D, T] rows for one warp per row (the march kernels), odd and
// vector-sized lengths, both directions.
TEST_F(ScanCuda, ManyRows) {
  torch::manual_seed(26);
  check_case(make_case(4, 500, 777, ScanLayout::kBDT, true, true), torch::kFloat, 0.5, 1.0,
             tolerance_of(torch::kFloat));
  check_case(make_case(2, 1024, 4096, ScanLayout::kBDT, false, true), torch::kBFloat16, 0.9, 1.0,
             tolerance_of(torch::kBFloat16));
  check_case(make_case(3, 700, 1000, ScanLayout::kBDT, false, false), torch::kHalf, 0.5, 1.0,
             tolerance_of(torch::kHalf));
}

// The two backends compute the same function on the GPU.
TEST_F(ScanCuda, AgreesWithVanillaOnTheGpu) {
  torch::manual_seed(25);
  const ScanCase c = make_case(3, 70, 3000, ScanLayout::kBTD, true, true);
  const Inputs in64 = random_inputs(c, 0.5, 1.0);
  const torch::Tensor a = in64.a.to(torch::kCUDA, torch::kFloat);
  const torch::Tensor b = in64.b.to(torch::kCUDA, torch::kFloat);
  const Inputs in{a, b, in64.x0.to(torch::kCUDA, torch::kFloat)};
  const ScanResult cuda = scan(a, b, in.options(c, ScanBackend::kCuda));
  const ScanResult vanilla = scan(a, b, in.options(c, ScanBackend::kVanilla));
  EXPECT_LT(relative_error(cuda.x, vanilla.x), 1e-5);
  EXPECT_LT(relative_error(cuda.last, vanilla.last), 1e-5);
}

TEST_F(ScanCuda, AutoPicksCudaAndFloat64StaysVanilla) {
  const torch::Tensor a = torch::rand({2, 3, 9}, torch::device(torch::kCUDA).dtype(torch::kDouble));
  ScanOptions o;
  const ScanResult out = scan(a, a, o);  // auto: float64 runs on the vanilla backend
  EXPECT_EQ(out.x.scalar_type(), torch::kDouble);
  o.backend = ScanBackend::kCuda;
  EXPECT_THROW(scan(a, a, o), InputError);
}

}  // namespace
}  // namespace flashrnn::scan_testing

// flashrnn/layers.h: the reference compositions against formulas written
// here (CPU, float64, with gradcheck), bad input, and on a GPU the kernels
// against the reference in float64 for every storage dtype (skipped without a
// GPU).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <tuple>

#include "flashrnn/layers.h"
#include "layers/layer_launch.h"

namespace flashrnn::testing {
namespace {

const auto f64 = torch::TensorOptions().dtype(torch::kDouble);

double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kDouble).cpu() - b.to(torch::kDouble).cpu()).abs().max().item<double>();
}

// Per head: (x − mean) / sqrt(biased variance + eps), then the weight.
torch::Tensor norm_by_formula(const torch::Tensor& x, const torch::Tensor& weight, int64_t heads, double eps) {
  auto shape = x.sizes().vec();
  shape.back() = heads;
  shape.push_back(x.size(-1) / heads);
  const torch::Tensor h = x.reshape(shape);
  const torch::Tensor mean = h.mean(-1, /*keepdim=*/true);
  const torch::Tensor var = (h - mean).pow(2).mean(-1, /*keepdim=*/true);
  return ((h - mean) / torch::sqrt(var + eps)).flatten(-2) * weight;
}

// y[b, t, c] = silu(bias[c] + Σ_k w[c, k] · x[b, t − K + 1 + k, c]), loops over k.
torch::Tensor conv_by_formula(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& bias) {
  const int64_t steps = x.size(1), kernel = w.size(1);
  torch::Tensor a = bias.expand_as(x).clone();
  for (int64_t k = 0; k < kernel; ++k) {
    const int64_t back = kernel - 1 - k;
    if (back >= steps) continue;
    a.narrow(1, back, steps - back).add_(x.narrow(1, 0, steps - back) * w.select(1, k));
  }
  return torch::silu(a);
}

TEST(HeadwiseNorm, ReferenceIsAPerHeadLayerNormTimesTheWeight) {
  torch::manual_seed(1);
  const torch::Tensor x = torch::randn({3, 5, 4 * 6}, f64) * 3 + 1, w = torch::randn({24}, f64);
  EXPECT_LT(max_abs_diff(headwise_norm(x, w, 4, 1e-5), norm_by_formula(x, w, 4, 1e-5)), 1e-12);
  // One head: a layer norm over the whole row; the output in the asked dtype.
  EXPECT_LT(max_abs_diff(headwise_norm(x, w, 1, 1e-5), norm_by_formula(x, w, 1, 1e-5)), 1e-12);
  const torch::Tensor as_float = headwise_norm(x.to(torch::kFloat), w.to(torch::kFloat), 1, 1e-5, torch::kBFloat16);
  EXPECT_EQ(as_float.scalar_type(), torch::kBFloat16);
  const torch::Tensor want = norm_by_formula(x, w, 1, 1e-5);
  EXPECT_LT(max_abs_diff(as_float, want) / want.abs().max().item<double>(), 1e-2);  // bf16 rounding
}

TEST(HeadwiseNorm, ReferenceGradientsPassGradcheck) {
  torch::manual_seed(2);
  const torch::Tensor x = torch::randn({2, 3, 2 * 5}, f64).requires_grad_(true);
  const torch::Tensor w = torch::randn({10}, f64).requires_grad_(true);
  const torch::Tensor y = headwise_norm(x, w, 2, 1e-5);
  const torch::Tensor probe = torch::randn_like(y);
  const auto grads = torch::autograd::grad({(y * probe).sum()}, {x, w});
  const torch::Tensor want = norm_by_formula(x, w, 2, 1e-5);
  const auto want_grads = torch::autograd::grad({(want * probe).sum()}, {x, w});
  EXPECT_LT(max_abs_diff(grads[0], want_grads[0]), 1e-12);
  EXPECT_LT(max_abs_diff(grads[1], want_grads[1]), 1e-12);
}

// Runs `call`, expecting an InputError whose message contains `words`.
template <class Call>
void expect_input_error(Call call, const std::string& words) {
  try {
    call();
    ADD_FAILURE() << "no error; expected one saying: " << words;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(HeadwiseNorm, BadInputIsNamed) {
  const torch::Tensor x = torch::randn({2, 12});
  expect_input_error([&] { headwise_norm(x, torch::ones({12}), 5, 1e-5); }, "num_heads 5");
  expect_input_error([&] { headwise_norm(x, torch::ones({6}), 2, 1e-5); }, "weight must be [12]");
}

TEST(ResidualAddNorm, IsTheAdditionThenTheNorm) {
  torch::manual_seed(9);
  const torch::Tensor x = torch::randn({2, 3, 12}, f64).requires_grad_(true);
  const torch::Tensor delta = torch::randn({2, 3, 12}, f64).requires_grad_(true);
  const torch::Tensor w = torch::randn({12}, f64).requires_grad_(true);
  const ResidualNorm got = residual_add_norm(x, delta, w, 3, 1e-5);
  EXPECT_LT(max_abs_diff(got.sum, x + delta), 1e-15);
  EXPECT_LT(max_abs_diff(got.normed, norm_by_formula(x + delta, w, 3, 1e-5)), 1e-12);
  const torch::Tensor p_sum = torch::randn_like(x), p_normed = torch::randn_like(x);
  const auto grads = torch::autograd::grad({(got.sum * p_sum).sum() + (got.normed * p_normed).sum()}, {x, delta, w});
  const torch::Tensor s = x + delta;
  const auto want = torch::autograd::grad({(s * p_sum).sum() + (norm_by_formula(s, w, 3, 1e-5) * p_normed).sum()},
                                          {x, delta, w});
  for (int i = 0; i < 3; ++i) EXPECT_LT(max_abs_diff(grads[i], want[i]), 1e-12) << "gradient " << i;
  // No delta: the stream is x itself.
  const ResidualNorm plain = residual_add_norm(x, torch::Tensor(), w, 3, 1e-5);
  EXPECT_TRUE(plain.sum.is_same(x));
  EXPECT_LT(max_abs_diff(plain.normed, norm_by_formula(x, w, 3, 1e-5)), 1e-12);
}

TEST(ResidualAddNorm, BadInputIsNamed) {
  const torch::Tensor x = torch::randn({2, 12});
  expect_input_error([&] { residual_add_norm(x, torch::randn({2, 6}), torch::ones({12}), 1, 1e-5); },
                     "delta must have x's shape [2, 12], got [2, 6]");
  expect_input_error([&] { residual_add_norm(x, torch::randn({2, 12}), torch::ones({12}), 5, 1e-5); }, "num_heads 5");
}

TEST(SiluMul, ReferenceIsTheFormulaWithItsGradients) {
  torch::manual_seed(11);
  const torch::Tensor g = (torch::randn({3, 4, 6}, f64) * 3).requires_grad_(true);
  const torch::Tensor u = torch::randn({3, 4, 6}, f64).requires_grad_(true);
  const torch::Tensor y = silu_mul(g, u);
  EXPECT_LT(max_abs_diff(y, g / (1 + torch::exp(-g)) * u), 1e-14);
  const torch::Tensor probe = torch::randn_like(y);
  const auto got = torch::autograd::grad({(y * probe).sum()}, {g, u});
  const torch::Tensor s = torch::sigmoid(g);
  EXPECT_LT(max_abs_diff(got[0], probe * u * s * (1 + g * (1 - s))), 1e-12);
  EXPECT_LT(max_abs_diff(got[1], probe * g * s), 1e-12);
}

TEST(SiluMul, BadInputIsNamed) {
  expect_input_error([] { silu_mul(torch::randn({2, 6}), torch::randn({2, 5})); },
                     "gate and up must have one shape, got [2, 6] and [2, 5]");
  expect_input_error([] { silu_mul(torch::randn({2, 6}), torch::randn({2, 6}, f64)); }, "one dtype");
}

TEST(CausalConvSilu, ReferenceMatchesTheFormulaForEveryKernelSize) {
  torch::manual_seed(3);
  for (const int64_t kernel : {1, 2, 4, 7}) {
    const torch::Tensor x = torch::randn({2, 6, 5}, f64), w = torch::randn({5, kernel}, f64),
                        b = torch::randn({5}, f64);
    EXPECT_LT(max_abs_diff(causal_conv_silu(x, w, b), conv_by_formula(x, w, b)), 1e-12) << "K " << kernel;
    // nn.Conv1d's weight layout [C, 1, K] is the same taps.
    EXPECT_LT(max_abs_diff(causal_conv_silu(x, w.unsqueeze(1), b), conv_by_formula(x, w, b)), 1e-12);
  }
}

TEST(CausalConvSilu, ReferenceGradientsMatchTheFormula) {
  torch::manual_seed(4);
  const torch::Tensor x = torch::randn({2, 7, 3}, f64).requires_grad_(true);
  const torch::Tensor w = torch::randn({3, 1, 4}, f64).requires_grad_(true);
  const torch::Tensor b = torch::randn({3}, f64).requires_grad_(true);
  const torch::Tensor probe = torch::randn({2, 7, 3}, f64);
  const auto got = torch::autograd::grad({(causal_conv_silu(x, w, b) * probe).sum()}, {x, w, b});
  const auto want = torch::autograd::grad({(conv_by_formula(x, w.squeeze(1), b) * probe).sum()}, {x, w, b});
  for (int i = 0; i < 3; ++i) EXPECT_LT(max_abs_diff(got[i], want[i]), 1e-12) << "gradient " << i;
}

TEST(CausalConvSilu, BadInputIsNamed) {
  expect_input_error([] { causal_conv_silu(torch::randn({2, 3}), torch::randn({3, 4}), torch::randn({3})); },
                     "x must be [batch, time, channels]");
  expect_input_error([] { causal_conv_silu(torch::randn({2, 5, 3}), torch::randn({4, 4}), torch::randn({3})); },
                     "weight must be [3, K]");
  expect_input_error([] { causal_conv_silu(torch::randn({2, 5, 3}), torch::randn({3, 4}), torch::randn({4})); },
                     "bias must be [3]");
}

// Which shapes the kernels take (the rest runs the reference): even widths,
// K up to 8, head dims up to 1024, and no more tiles of time than a grid's y.
TEST(LayerKernelShapes, OnlyWhatTheKernelsCanRun) {
  EXPECT_TRUE(layers::causal_conv_kernels_take({64, 1024, 768, 4}));
  EXPECT_FALSE(layers::causal_conv_kernels_take({64, 1024, 767, 4}));
  EXPECT_FALSE(layers::causal_conv_kernels_take({64, 1024, 768, 9}));
  EXPECT_TRUE(layers::causal_conv_kernels_take({65535, 64, 768, 4}));
  EXPECT_FALSE(layers::causal_conv_kernels_take({65536, 64, 768, 4}));
  EXPECT_FALSE(layers::causal_conv_kernels_take({1024, 4096, 768, 4}));  // 65536 tiles
  EXPECT_TRUE(layers::headwise_norm_kernels_take({12, 12, 64}));
  EXPECT_TRUE(layers::headwise_norm_kernels_take({1, 1, 1024}));
  EXPECT_FALSE(layers::headwise_norm_kernels_take({1, 1, 1026}));
  EXPECT_FALSE(layers::headwise_norm_kernels_take({2, 2, 9}));
}

// ---- the CUDA kernels against the float64 reference ----

struct DtypeCase {
  torch::Dtype dtype;
  double tolerance;  // relative to the reference's largest magnitude
};
const DtypeCase kDtypes[] = {{torch::kFloat, 2e-5}, {torch::kBFloat16, 2e-2}, {torch::kHalf, 4e-3}};

class LayerKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  }
};

// Rounds to `dtype` so that the reference sees the values the kernel sees.
torch::Tensor as_seen(const torch::Tensor& t, torch::Dtype dtype) { return t.to(dtype).to(torch::kDouble); }

void expect_close(const torch::Tensor& got, const torch::Tensor& want, double tolerance, const std::string& what) {
  const double scale = std::max(1.0, want.abs().max().item<double>());
  EXPECT_LT(max_abs_diff(got, want) / scale, tolerance) << what;
}

TEST_F(LayerKernels, HeadwiseNormMatchesTheReference) {
  torch::manual_seed(5);
  // (vectors, heads, head dim): groups of 1 to 32 lanes a row, up to 16
  // pairs a lane; odd and wider head dims (the reference runs those); more
  // rows than the backward's resident lane groups, which then take several
  // each (a LayerNorm; 12 heads and 5, which do not divide a block's 32 groups).
  for (const auto& [vectors, heads, d] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 2}, {37, 3, 20},
                                          {300, 12, 64}, {5, 2, 100}, {7, 4, 256}, {3, 2, 9}, {9, 1, 768}, {3, 1, 520},
                                          {4, 1, 1024}, {2, 1, 1030}, {20000, 1, 768}, {6000, 12, 64}, {3001, 5, 64}}) {
    for (const DtypeCase& c : kDtypes) {
      const torch::Tensor x = as_seen(torch::randn({vectors, heads * d}, f64) * 2 + 0.5, c.dtype);
      const torch::Tensor w = torch::randn({heads * d}, f64).to(torch::kFloat).to(torch::kDouble);
      const torch::Tensor dy = as_seen(torch::randn({vectors, heads * d}, f64), c.dtype);
      const std::string what = "vectors " + std::to_string(vectors) + " heads " + std::to_string(heads) +
                               " D " + std::to_string(d) + " " + std::string(c10::toString(c.dtype));
      const torch::Tensor xr = x.clone().requires_grad_(true), wr = w.clone().requires_grad_(true);
      const torch::Tensor want = headwise_norm_reference(xr, wr, heads, 1e-5);
      const auto want_grads = torch::autograd::grad({(want * dy).sum()}, {xr, wr});
      const torch::Tensor xg = x.to(torch::kCUDA, c.dtype).requires_grad_(true);
      const torch::Tensor wg = w.to(torch::kCUDA, torch::kFloat).requires_grad_(true);
      const torch::Tensor got = headwise_norm(xg, wg, heads, 1e-5);
      ASSERT_EQ(got.scalar_type(), c.dtype) << what;
      const auto got_grads = torch::autograd::grad({(got * dy.to(torch::kCUDA, c.dtype)).sum()}, {xg, wg});
      expect_close(got, want, c.tolerance, what + ": y");
      expect_close(got_grads[0], want_grads[0], c.tolerance, what + ": dx");
      // dw sums over every vector: its error grows with their number.
      expect_close(got_grads[1] / std::sqrt(double(vectors)), want_grads[1] / std::sqrt(double(vectors)),
                   c.tolerance, what + ": dw");
    }
  }
}

TEST_F(LayerKernels, CausalConvSiluMatchesTheReference) {
  torch::manual_seed(6);
  // (batch, steps, channels, kernel): T shorter than K, tiles of time cut
  // between K neighbours, K = 1 and the largest; odd channels and K = 9 run
  // the reference.
  for (const auto& [batch, steps, channels, kernel] :
       {std::tuple<int64_t, int64_t, int64_t, int64_t>{1, 1, 2, 1}, {2, 3, 6, 4}, {3, 150, 300, 4},
        {2, 130, 768, 4}, {1, 67, 34, 8}, {4, 9, 8, 2}, {2, 5, 7, 3}, {1, 20, 4, 9}}) {
    for (const DtypeCase& c : kDtypes) {
      const torch::Tensor x = as_seen(torch::randn({batch, steps, channels}, f64), c.dtype);
      const torch::Tensor w = (torch::randn({channels, 1, kernel}, f64) / std::sqrt(double(kernel))).to(torch::kFloat).to(torch::kDouble);
      const torch::Tensor b = torch::randn({channels}, f64).to(torch::kFloat).to(torch::kDouble);
      const torch::Tensor dy = as_seen(torch::randn({batch, steps, channels}, f64), c.dtype);
      const std::string what = "B " + std::to_string(batch) + " T " + std::to_string(steps) + " C " +
                               std::to_string(channels) + " K " + std::to_string(kernel) + " " +
                               std::string(c10::toString(c.dtype));
      const torch::Tensor xr = x.clone().requires_grad_(true), wr = w.clone().requires_grad_(true),
                          br = b.clone().requires_grad_(true);
      const torch::Tensor want = causal_conv_silu_reference(xr, wr, br);
      const auto want_grads = torch::autograd::grad({(want * dy).sum()}, {xr, wr, br});
      const torch::Tensor xg = x.to(torch::kCUDA, c.dtype).requires_grad_(true);
      const torch::Tensor wg = w.to(torch::kCUDA, torch::kFloat).requires_grad_(true);
      const torch::Tensor bg = b.to(torch::kCUDA, torch::kFloat).requires_grad_(true);
      const torch::Tensor got = causal_conv_silu(xg, wg, bg);
      ASSERT_EQ(got.scalar_type(), c.dtype) << what;
      const auto got_grads = torch::autograd::grad({(got * dy.to(torch::kCUDA, c.dtype)).sum()}, {xg, wg, bg});
      ASSERT_EQ(got_grads[1].sizes(), wg.sizes()) << what;
      expect_close(got, want, c.tolerance, what + ": y");
      expect_close(got_grads[0], want_grads[0], c.tolerance, what + ": dx");
      const double rows = std::sqrt(double(batch * steps));
      expect_close(got_grads[1] / rows, want_grads[1] / rows, c.tolerance, what + ": dw");
      expect_close(got_grads[2] / rows, want_grads[2] / rows, c.tolerance, what + ": db");
    }
  }
}

TEST_F(LayerKernels, SiluMulMatchesTheReference) {
  torch::manual_seed(12);
  // An odd count runs the reference; a large one the grid-stride loop.
  for (const int64_t n : {int64_t(2), int64_t(3 * 1024), int64_t(7), int64_t(5000000)}) {
    for (const DtypeCase& c : kDtypes) {
      const torch::Tensor g = as_seen(torch::randn({n}, f64) * 3, c.dtype), u = as_seen(torch::randn({n}, f64), c.dtype);
      const torch::Tensor dy = as_seen(torch::randn({n}, f64), c.dtype);
      const torch::Tensor gr = g.clone().requires_grad_(true), ur = u.clone().requires_grad_(true);
      const torch::Tensor want = silu_mul_reference(gr, ur);
      const auto want_grads = torch::autograd::grad({(want * dy).sum()}, {gr, ur});
      const torch::Tensor gg = g.to(torch::kCUDA, c.dtype).requires_grad_(true);
      const torch::Tensor ug = u.to(torch::kCUDA, c.dtype).requires_grad_(true);
      const torch::Tensor got = silu_mul(gg, ug);
      ASSERT_EQ(got.scalar_type(), c.dtype);
      const auto got_grads = torch::autograd::grad({(got * dy.to(torch::kCUDA, c.dtype)).sum()}, {gg, ug});
      const std::string what = "n " + std::to_string(n) + " " + c10::toString(c.dtype);
      expect_close(got, want, c.tolerance, what + ": y");
      expect_close(got_grads[0], want_grads[0], c.tolerance, what + ": d_gate");
      expect_close(got_grads[1], want_grads[1], c.tolerance, what + ": d_up");
    }
  }
}

// A float32 residual stream normalised into bf16 / fp16 (a layer norm: one
// head): the output in the asked dtype, x's gradient in float32.
TEST_F(LayerKernels, HeadwiseNormWritesTheAskedDtype) {
  torch::manual_seed(8);
  for (const torch::Dtype out : {torch::kBFloat16, torch::kHalf}) {
    const torch::Tensor x = torch::randn({6, 33, 768}, f64).to(torch::kFloat).to(torch::kDouble) * 3 + 1;
    const torch::Tensor w = torch::randn({768}, f64).to(torch::kFloat).to(torch::kDouble);
    const torch::Tensor dy = as_seen(torch::randn({6, 33, 768}, f64), out);
    const torch::Tensor xr = x.clone().requires_grad_(true), wr = w.clone().requires_grad_(true);
    const torch::Tensor want = headwise_norm_reference(xr, wr, 1, 1e-5);
    const auto want_grads = torch::autograd::grad({(want * dy).sum()}, {xr, wr});
    const torch::Tensor xg = x.to(torch::kCUDA, torch::kFloat).requires_grad_(true);
    const torch::Tensor wg = w.to(torch::kCUDA, torch::kFloat).requires_grad_(true);
    const torch::Tensor got = headwise_norm(xg, wg, 1, 1e-5, out);
    ASSERT_EQ(got.scalar_type(), out);
    const auto got_grads = torch::autograd::grad({(got * dy.to(torch::kCUDA, out)).sum()}, {xg, wg});
    ASSERT_EQ(got_grads[0].scalar_type(), torch::kFloat);
    const std::string what = c10::toString(out);
    expect_close(got, want, 2e-2, what + ": y");
    expect_close(got_grads[0], want_grads[0], 1e-4, what + ": dx");
    expect_close(got_grads[1] / std::sqrt(198.0), want_grads[1] / std::sqrt(198.0), 1e-4, what + ": dw");
  }
}

// The fused addition + norm against `x + delta` then headwise_norm (which
// runs the norm kernels): the same sums in the same order, so every output
// and gradient to the bit, for each (stream, output) dtype pair the kernels
// take; also with the sum's gradient or the output's gradient absent (a
// model's last norm: its sum feeds nothing).
TEST_F(LayerKernels, ResidualAddNormIsTheAdditionThenTheNormToTheBit) {
  torch::manual_seed(10);
  const std::pair<torch::Dtype, torch::Dtype> kTypes[] = {{torch::kFloat, torch::kFloat},
                                                         {torch::kBFloat16, torch::kBFloat16},
                                                         {torch::kHalf, torch::kHalf},
                                                         {torch::kFloat, torch::kBFloat16},
                                                         {torch::kFloat, torch::kHalf}};
  for (const auto& [vectors, heads, d] : {std::tuple<int64_t, int64_t, int64_t>{37, 3, 20}, {300, 12, 64},
                                          {9, 1, 768}, {3, 1, 520}, {4, 1, 1024}}) {
    for (const auto& [stream, out] : kTypes) {
      for (const bool sum_used : {true, false}) {
        for (const bool normed_used : {true, false}) {
          if (!sum_used && !normed_used) continue;
          const auto cuda = torch::TensorOptions().device(torch::kCUDA);
          const torch::Tensor x = (torch::randn({vectors, heads * d}, cuda) * 2 + 0.5).to(stream).requires_grad_(true);
          const torch::Tensor delta = torch::randn({vectors, heads * d}, cuda).to(out).requires_grad_(true);
          const torch::Tensor w = torch::randn({heads * d}, cuda).requires_grad_(true);
          const torch::Tensor p_sum = torch::randn({vectors, heads * d}, cuda).to(stream);
          const torch::Tensor p_normed = torch::randn({vectors, heads * d}, cuda).to(out);
          const auto loss = [&](const torch::Tensor& sum, const torch::Tensor& normed) {
            torch::Tensor l = torch::zeros({}, cuda);
            if (sum_used) l = l + (sum * p_sum).sum();
            if (normed_used) l = l + (normed * p_normed).sum();
            return l;
          };
          const ResidualNorm got = residual_add_norm(x, delta, w, heads, 1e-5, out);
          const torch::Tensor want_sum = x + delta;
          const torch::Tensor want_normed = headwise_norm(want_sum, w, heads, 1e-5, out);
          const std::string what = "vectors " + std::to_string(vectors) + " heads " + std::to_string(heads) + " D " +
                                   std::to_string(d) + " " + c10::toString(stream) + " -> " + c10::toString(out) +
                                   (sum_used ? " sum" : "") + (normed_used ? " normed" : "");
          ASSERT_EQ(got.sum.scalar_type(), stream) << what;
          ASSERT_EQ(got.normed.scalar_type(), out) << what;
          EXPECT_TRUE(torch::equal(got.sum, want_sum)) << what;
          EXPECT_TRUE(torch::equal(got.normed, want_normed)) << what;
          const auto grads =
              torch::autograd::grad({loss(got.sum, got.normed)}, {x, delta, w}, {}, false, false, /*allow_unused=*/true);
          const auto want = torch::autograd::grad({loss(want_sum, want_normed)}, {x, delta, w}, {}, false, false, true);
          for (int i = 0; i < 2; ++i) {
            ASSERT_TRUE(grads[i].defined()) << what;
            EXPECT_TRUE(torch::equal(grads[i], want[i])) << what << ": gradient " << i << " off by "
                                                        << max_abs_diff(grads[i], want[i]);
          }
          if (normed_used) {
            EXPECT_TRUE(torch::equal(grads[2], want[2])) << what << ": dw";
          }
        }
      }
    }
  }
}

// A view that starts at an odd element is copied before the kernels' pair
// loads, not read misaligned.
TEST_F(LayerKernels, ViewsStartingAtAnOddElementAreRead) {
  torch::manual_seed(7);
  const auto cuda = torch::TensorOptions().device(torch::kCUDA).dtype(torch::kBFloat16);
  const torch::Tensor x = torch::randn({1 + 4 * 6 * 64}, cuda).narrow(0, 1, 4 * 6 * 64).view({4, 6, 64});
  const torch::Tensor w = torch::randn({64}, torch::TensorOptions().device(torch::kCUDA));
  expect_close(headwise_norm(x, w, 2, 1e-5), headwise_norm_reference(x.to(torch::kDouble), w.to(torch::kDouble), 2, 1e-5),
               2e-2, "headwise_norm");
  const torch::Tensor taps = torch::randn({64, 4}, torch::TensorOptions().device(torch::kCUDA));
  const torch::Tensor bias = torch::randn({64}, torch::TensorOptions().device(torch::kCUDA));
  expect_close(causal_conv_silu(x, taps, bias),
               causal_conv_silu_reference(x.to(torch::kDouble), taps.to(torch::kDouble), bias.to(torch::kDouble)), 2e-2,
               "causal_conv_silu");
}

}  // namespace
}  // namespace flashrnn::testing

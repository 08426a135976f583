// Every block kind (and the variants its options select): shapes, causality,
// step-by-step equals full sequence, gradients, FLOPs, bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>

#include "flashtrain/models/errors.h"
#include "flashtrain/models/residual_block.h"
#include "model_test_util.h"

namespace flashtrain::models::testing {
namespace {

constexpr int64_t kDModel = 16;

struct Variant {
  std::string name;
  BlockKind kind;
  std::function<void(BlockOptions&)> adjust = [](BlockOptions&) {};
};

BlockOptions small_options() {
  BlockOptions o;
  o.recurrent.num_heads = 2;
  o.slstm.num_heads = 2;
  o.transformer.num_heads = 2;
  o.linear_scan.hidden_dim = 12;  // != d_model: the projections' shapes must not assume it
  return o;
}

const Variant kVariants[] = {
    {"lstm", BlockKind::kLstm},
    {"lstm_block_diagonal", BlockKind::kLstm,
     [](BlockOptions& o) { o.recurrent.block_diagonal_input = true; }},
    {"lstm_head_dim_6", BlockKind::kLstm, [](BlockOptions& o) { o.recurrent.head_dim = 6; }},
    {"lstm_no_ffn", BlockKind::kLstm,
     [](BlockOptions& o) { o.recurrent.ffn.projection_factor = 0; }},
    {"gru", BlockKind::kGru},
    {"gru_block_diagonal", BlockKind::kGru,
     [](BlockOptions& o) { o.recurrent.block_diagonal_input = true; }},
    {"elman", BlockKind::kElman},
    {"slstm", BlockKind::kSlstm},
    {"slstm_no_conv", BlockKind::kSlstm, [](BlockOptions& o) { o.slstm.conv_kernel = 0; }},
    {"slstm_one_head", BlockKind::kSlstm, [](BlockOptions& o) { o.slstm.num_heads = 1; }},
    {"lstm_recompute", BlockKind::kLstm, [](BlockOptions& o) { o.recurrent.recompute = true; }},
    {"slstm_recompute", BlockKind::kSlstm, [](BlockOptions& o) { o.slstm.recompute = true; }},
    {"linear_scan", BlockKind::kLinearScan},
    {"transformer", BlockKind::kTransformer},
};

void PrintTo(const Variant& v, std::ostream* out) { *out << v.name; }

class BlockTest : public ::testing::TestWithParam<Variant> {
 protected:
  // A float64 block with perturbed parameters (see perturb_parameters).
  ResidualBlock make_block(int64_t num_blocks = 2) {
    BlockOptions options = small_options();
    GetParam().adjust(options);
    ResidualBlock block(GetParam().kind, BlockContext{kDModel, num_blocks}, options);
    block->to(torch::kDouble);
    perturb_parameters(*block, 0.2);
    return block;
  }
  static torch::Tensor input(int64_t batch, int64_t steps) {
    return torch::randn({batch, steps, kDModel}, torch::kDouble);
  }
};

// Shape and dtype kept; changing the input at time t leaves every output before
// t unchanged and changes the outputs at t and later (a mask or a conv window
// off by one, or a state that is not carried, fails here).
TEST_P(BlockTest, ForwardIsShapePreservingAndCausal) {
  torch::manual_seed(1);
  ResidualBlock block = make_block();
  const int64_t steps = 9, changed = 5;
  const torch::Tensor x = input(2, steps);
  torch::Tensor x_changed = x.clone();
  // Random, not a constant shift: a LayerNorm does not see a constant shift.
  x_changed.select(1, changed) += torch::randn({2, kDModel}, torch::kDouble);
  const torch::Tensor y = block(x), y_changed = block(x_changed);
  EXPECT_EQ(y.sizes(), x.sizes());
  EXPECT_EQ(y.scalar_type(), torch::kDouble);
  EXPECT_EQ(max_abs_diff(y.narrow(1, 0, changed), y_changed.narrow(1, 0, changed)), 0.0);
  EXPECT_GT(max_abs_diff(y.select(1, changed), y_changed.select(1, changed)), 1e-6);
  EXPECT_GT(max_abs_diff(y.select(1, steps - 1), y_changed.select(1, steps - 1)), 1e-6)
      << "the change does not reach later steps: no state is carried";

  block->to(torch::kFloat);
  const torch::Tensor y_float = block(x.to(torch::kFloat));
  EXPECT_EQ(y_float.scalar_type(), torch::kFloat);
  EXPECT_LT(max_abs_diff(y_float.to(torch::kDouble), y), 1e-4);
}

// A stream handed on with an addition pending (what the model passes from
// block to block, so that each norm does the addition before it) gives the
// outputs of that addition done first; the output's own last addition is left
// pending.
TEST_P(BlockTest, AStreamWithItsAdditionPendingGivesTheAddedStreamsOutputs) {
  torch::manual_seed(2);
  ResidualBlock block = make_block();
  const torch::Tensor x = input(2, 7), pending = input(2, 7);
  const ResidualStream out = block->forward_stream({x, pending});
  EXPECT_TRUE(out.pending.defined());
  EXPECT_EQ(max_abs_diff(out.total(), block(x + pending)), 0.0);
}

// Stepping one token at a time from initial_state gives the full-sequence
// outputs; the state has a fixed size (the KV cache grows by one token); batch
// rows do not mix (stepping row 0 alone gives row 0's outputs).
TEST_P(BlockTest, StepByStepEqualsFullSequence) {
  torch::manual_seed(3);
  ResidualBlock block = make_block();
  const int64_t batch = 3, steps = 11;
  const torch::Tensor x = input(batch, steps);
  const torch::Tensor full = block(x);

  BlockState state = block->initial_state(batch, x.options());
  BlockState row0_state = block->initial_state(1, x.options());
  const int64_t first_state_numel = state_numel(state);
  for (int64_t t = 0; t < steps; ++t) {
    StepOutput step = block->forward_step(x.select(1, t), state);
    ASSERT_EQ(step.y.sizes(), (std::vector<int64_t>{batch, kDModel}));
    EXPECT_LT(max_abs_diff(step.y, full.select(1, t)), 1e-12) << "step " << t;
    state = std::move(step.state);
    if (GetParam().kind == BlockKind::kTransformer) {
      EXPECT_EQ(state.at("keys").size(2), t + 1);
    } else {
      EXPECT_EQ(state_numel(state), first_state_numel);  // O(1) per token
    }
    StepOutput alone = block->forward_step(x.select(1, t).narrow(0, 0, 1), row0_state);
    EXPECT_LT(max_abs_diff(alone.y, full.select(1, t).narrow(0, 0, 1)), 1e-12) << "step " << t;
    row0_state = std::move(alone.state);
  }
}

TEST_P(BlockTest, GradientsReachEveryParameter) {
  torch::manual_seed(5);
  ResidualBlock block = make_block();
  const torch::Tensor x = input(2, 7).requires_grad_();
  (block(x) * torch::randn({2, 7, kDModel}, torch::kDouble)).sum().backward();
  for (const auto& item : block->named_parameters()) {
    const torch::Tensor& grad = item.value().grad();
    ASSERT_TRUE(grad.defined()) << item.key() << " got no gradient";
    EXPECT_TRUE(grad.isfinite().all().item<bool>()) << item.key();
    EXPECT_GT(grad.abs().max().item<double>(), 0.0) << item.key() << " has an all-zero gradient";
  }
  EXPECT_GT(x.grad().abs().max().item<double>(), 0.0);
}

INSTANTIATE_TEST_SUITE_P(AllKinds, BlockTest, ::testing::ValuesIn(kVariants),
                         [](const auto& info) { return info.param.name; });

// FLOPs by hand for d_model 16, 2 heads (D = 8), feed-forward 4/3 -> 64 wide.
constexpr BlockKind kAllKinds[] = {BlockKind::kLstm,       BlockKind::kGru,
                                   BlockKind::kElman,      BlockKind::kSlstm,
                                   BlockKind::kLinearScan, BlockKind::kTransformer};

// recompute changes where the op's buffers come from, not a single bit of the
// block's output or its gradients.
TEST(BlockRecompute, SameOutputAndGradientsAsKeepingTheBuffers) {
  for (const BlockKind kind : {BlockKind::kLstm, BlockKind::kGru, BlockKind::kSlstm}) {
    std::vector<torch::Tensor> results[2];
    for (const bool recompute : {false, true}) {
      BlockOptions options = small_options();
      options.recurrent.recompute = options.slstm.recompute = recompute;
      torch::manual_seed(8);
      ResidualBlock block(kind, BlockContext{kDModel, 2}, options);
      block->to(torch::kDouble);
      perturb_parameters(*block, 0.2);
      const torch::Tensor x = torch::randn({2, 7, kDModel}, torch::kDouble).requires_grad_();
      const torch::Tensor y = block(x);
      (y * torch::randn_like(y)).sum().backward();
      results[recompute] = {y.detach(), x.grad()};
      for (const torch::Tensor& p : block->parameters()) results[recompute].push_back(p.grad());
    }
    ASSERT_EQ(results[0].size(), results[1].size());
    for (std::size_t i = 0; i < results[0].size(); ++i)
      EXPECT_TRUE(results[0][i].equal(results[1][i])) << to_string(kind) << ": tensor " << i;
  }
}

TEST(BlockInput, RejectsMisshapenInputAndState) {
  for (BlockKind kind : kAllKinds) {
    SCOPED_TRACE(std::string(to_string(kind)));
    ResidualBlock block(kind, BlockContext{kDModel, 1}, small_options());
    block->to(torch::kDouble);
    const std::string name = std::string(to_string(kind)) + " block: ";
    expect_error<InputError>(
        [&] {
          block(torch::randn({2, 5, kDModel + 1}, torch::kDouble));
        },
        name + "x must be [batch, time >= 1, 16], got [2, 5, 17]");
    expect_error<InputError>(
        [&] {
          block(torch::randn({5, kDModel}, torch::kDouble));
        },
        "got [5, 16]");
    expect_error<InputError>(
        [&] {
          block->forward_step(torch::randn({2, 1, kDModel}, torch::kDouble), {});
        },
        name + "x_t must be [batch, 16] (one token), got [2, 1, 16]");
    expect_error<InputError>(
        [&] {
          block->forward_step(torch::randn({2, kDModel}, torch::kDouble), {});
        },
        name + "the state has no");
    // A state made for another batch size.
    const BlockState state = block->initial_state(3, torch::kDouble);
    expect_error<InputError>(
        [&] {
          block->forward_step(torch::randn({2, kDModel}, torch::kDouble), state);
        },
        "expected [2, ");
  }
}

// On a GPU, with the backends `auto` picks there (fused or alternating, the
// CUDA scan): the same outputs and gradients as the vanilla backends, and step
// by step equals the full sequence. float32, head sizes up to 128; skipped
// without a GPU.
TEST(BlocksOnCuda, AutoBackendsMatchVanillaAndStepByStep) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no GPU";
  const BlockContext context{128, 2};
  const auto cuda = torch::TensorOptions().dtype(torch::kFloat).device(torch::kCUDA);
  const auto relative = [](const torch::Tensor& got, const torch::Tensor& want) {
    return max_abs_diff(got, want) / std::max(want.abs().max().item<double>(), 1e-30);
  };
  for (const Variant& variant : kVariants) {
    SCOPED_TRACE(variant.name);
    BlockOptions options;
    options.recurrent.num_heads = options.slstm.num_heads = options.transformer.num_heads = 2;
    options.linear_scan.hidden_dim = 96;
    variant.adjust(options);
    BlockOptions vanilla = options;
    vanilla.recurrent.backend = vanilla.slstm.backend = flashrnn::Backend::kVanilla;
    vanilla.linear_scan.backend = flashrnn::ScanBackend::kVanilla;
    torch::manual_seed(11);
    ResidualBlock reference(variant.kind, context, vanilla);
    ResidualBlock block(variant.kind, context, options);
    perturb_parameters(*reference, 0.05);
    {
      torch::NoGradGuard no_grad;
      const auto from = reference->parameters();
      const auto to = block->parameters();
      for (size_t i = 0; i < to.size(); ++i) to[i].copy_(from[i]);
    }
    reference->to(torch::kCUDA);
    block->to(torch::kCUDA);

    const int64_t batch = 3, steps = 37;
    const torch::Tensor x = torch::randn({batch, steps, context.d_model}, cuda);
    const torch::Tensor probe = torch::randn({batch, steps, context.d_model}, cuda);
    const torch::Tensor want = reference(x), got = block(x);
    EXPECT_LT(relative(got, want), 1e-4);
    (want * probe).sum().backward();
    (got * probe).sum().backward();
    const auto want_params = reference->named_parameters();
    for (const auto& item : block->named_parameters())
      EXPECT_LT(relative(item.value().grad(), want_params[item.key()].grad()), 1e-3) << item.key();

    torch::NoGradGuard no_grad;
    BlockState state = block->initial_state(batch, cuda);
    double worst = 0;
    for (int64_t t = 0; t < steps; ++t) {
      StepOutput step = block->forward_step(x.select(1, t), state);
      worst = std::max(worst, relative(step.y, got.select(1, t)));
      state = std::move(step.state);
    }
    EXPECT_LT(worst, 1e-4);
  }
}

TEST(BlockFlops, MatchHandCounts) {
  const BlockOptions o = small_options();
  const BlockContext c{kDModel, 1};
  const double ffn = 2 * 3 * 16 * 64;
  // LSTM: input 2*16*(4*2*8), recurrent 2*4*2*8*8, output 2*16*16.
  EXPECT_DOUBLE_EQ(ResidualBlock(BlockKind::kLstm, c, o)->forward_flops_per_token(1),
                   2 * 16 * 64 + 2 * 4 * 2 * 8 * 8 + 2 * 16 * 16 + ffn);
  // GRU: 3 gates read the input and the recurrence.
  EXPECT_DOUBLE_EQ(ResidualBlock(BlockKind::kGru, c, o)->forward_flops_per_token(1),
                   2 * 16 * 48 + 2 * 3 * 2 * 8 * 8 + 2 * 16 * 16 + ffn);
  // Block-diagonal LSTM input: each output unit reads one head's 8 inputs.
  BlockOptions diagonal = o;
  diagonal.recurrent.block_diagonal_input = true;
  EXPECT_DOUBLE_EQ(ResidualBlock(BlockKind::kLstm, c, diagonal)->forward_flops_per_token(1),
                   2 * 8 * 64 + 2 * 4 * 2 * 8 * 8 + 2 * 16 * 16 + ffn);
  // sLSTM: conv 2*4*16, four head-wise gates 4*2*2*8*8, recurrent 4*2*2*8*8.
  EXPECT_DOUBLE_EQ(ResidualBlock(BlockKind::kSlstm, c, o)->forward_flops_per_token(1),
                   2 * 4 * 16 + 4 * 2 * 2 * 8 * 8 + 4 * 2 * 2 * 8 * 8 + ffn);
  // Linear scan (12 channels): in 2*16*36, out 2*12*16, scan 2*12.
  EXPECT_DOUBLE_EQ(ResidualBlock(BlockKind::kLinearScan, c, o)->forward_flops_per_token(1),
                   2 * 16 * 36 + 2 * 12 * 16 + 2 * 12 + ffn);
  // Transformer: 8 d^2 + 4 d T, feed-forward 8/3 -> 64 wide too.
  EXPECT_DOUBLE_EQ(ResidualBlock(BlockKind::kTransformer, c, o)->forward_flops_per_token(100),
                   8 * 16 * 16 + 4 * 16 * 100 + ffn);
  // Only attention's cost depends on the context.
  for (BlockKind kind : kAllKinds) {
    ResidualBlock block(kind, c, o);
    const double growth =
        block->forward_flops_per_token(1024) - block->forward_flops_per_token(128);
    EXPECT_DOUBLE_EQ(growth, kind == BlockKind::kTransformer ? 4.0 * 16 * (1024 - 128) : 0.0)
        << to_string(kind);
  }
}

TEST(BlockOptionsCheck, NamesTheBadOption) {
  const BlockContext c{kDModel, 1};
  BlockOptions o = small_options();
  o.recurrent.num_heads = 3;
  expect_error<OptionsError>([&] { ResidualBlock(BlockKind::kLstm, c, o); },
                             "lstm block: d_model 16 is not divisible by num_heads 3");
  o.recurrent.head_dim = 5;  // an explicit head size frees the dense projection from dividing
  EXPECT_NO_THROW(ResidualBlock(BlockKind::kLstm, c, o));
  o.recurrent.block_diagonal_input = true;
  expect_error<OptionsError>([&] { ResidualBlock(BlockKind::kGru, c, o); },
                             "block_diagonal_input splits d_model over the heads");
  o = small_options();
  o.transformer.num_heads = 16;
  expect_error<OptionsError>([&] { ResidualBlock(BlockKind::kTransformer, c, o); },
                             "head_dim d_model / num_heads = 1 must be even");
  o.slstm.num_heads = 5;
  expect_error<OptionsError>([&] { ResidualBlock(BlockKind::kSlstm, c, o); },
                             "slstm block: num_heads 5 must be positive and divide d_model 16");
  o.linear_scan.min_timescale = 1.0;
  expect_error<OptionsError>([&] { ResidualBlock(BlockKind::kLinearScan, c, o); },
                             "need 1 < min_timescale <= max_timescale");
  o = small_options();
  o.slstm.ffn.projection_factor = -1;
  expect_error<OptionsError>([&] { ResidualBlock(BlockKind::kSlstm, c, o); },
                             "ffn.projection_factor must not be negative");
  expect_error<OptionsError>(
      [&] {
        ResidualBlock(BlockKind::kElman, BlockContext{0, 1}, o);
      },
      "elman block: d_model must be positive, got 0");
}

TEST(BlockKindNames, RoundTripAndListChoices) {
  for (BlockKind kind : kAllKinds) EXPECT_EQ(parse_block_kind(to_string(kind)), kind);
  expect_error<OptionsError>([] { parse_block_kind("lsmt"); },
                             "unknown block kind 'lsmt'; choose one of lstm, gru, elman, slstm, "
                             "linear_scan, transformer");
}

}  // namespace
}  // namespace flashtrain::models::testing

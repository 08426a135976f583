// Malformed inputs: each case must fail with an InputError whose message names
// the problem.
#include <gtest/gtest.h>

#include <functional>

#include "reference.h"

namespace flashrnn::testing {
namespace {

struct Case {
  const char* name;
  std::function<void(OpInputs&)> break_it;
  const char* message;  // must appear in the error
};

const auto f64 = torch::TensorOptions().dtype(torch::kDouble);

const Case kCases[] = {
    {"wx_rank", [](OpInputs& in) { in.wx = in.wx.flatten(3); },
     "Wx must have 5 dimensions [B, T, G, N, D], got shape [2, 3, 4, 6]"},
    {"wx_gates_for_cell", [](OpInputs& in) { in.wx = in.wx.narrow(2, 0, 3); },
     "Wx has shape [2, 3, 3, 2, 3] but expected [*, *, 4, *, *] [B, T, G, N, D]: lstm has 4 gates"},
    {"wx_empty_time", [](OpInputs& in) { in.wx = in.wx.narrow(1, 0, 0); },
     "the sequence length T must be at least 1"},
    {"wx_empty_batch", [](OpInputs& in) { in.wx = in.wx.narrow(0, 0, 0); },
     "B, N and D must be at least 1"},
    {"wx_integer_dtype", [](OpInputs& in) { in.wx = in.wx.to(torch::kLong); },
     "Wx has dtype Long; supported are float32, float64, float16 and bfloat16"},
    {"wx_meta_device", [](OpInputs& in) { in.wx = torch::empty(in.wx.sizes(), f64.device(torch::kMeta)); },
     "Wx is on meta; flashrnn runs on cpu and cuda devices"},
    {"r_rank", [](OpInputs& in) { in.r = in.r.flatten(0, 1); },
     "R must have 4 dimensions [G, N, D, D], got shape [8, 3, 3]"},
    {"r_gates", [](OpInputs& in) { in.r = in.r.narrow(0, 0, 2); },
     "R has shape [2, 2, 3, 3] but expected [4, *, *, *] [G, N, D, D]: lstm has 4 gates"},
    {"r_not_square", [](OpInputs& in) { in.r = torch::randn({4, 2, 3, 5}, f64); },
     "R has shape [4, 2, 3, 5] but each head's matrix must be square"},
    {"r_heads", [](OpInputs& in) { in.r = torch::randn({4, 1, 3, 3}, f64); },
     "R has shape [4, 1, 3, 3] but expected [4, 2, 3, 3] [G, N, D, D]: heads N and head dimension D must match Wx"},
    {"r_head_dim", [](OpInputs& in) { in.r = torch::randn({4, 2, 4, 4}, f64); },
     "R has shape [4, 2, 4, 4] but expected [4, 2, 3, 3]"},
    {"r_dtype", [](OpInputs& in) { in.r = in.r.to(torch::kFloat); },
     "R has dtype Float but Wx has dtype Double; R, b and initial_states take Wx's dtype"},
    {"r_device", [](OpInputs& in) { in.r = torch::empty(in.r.sizes(), f64.device(torch::kMeta)); },
     "R is on meta but Wx is on cpu; all tensors must be on one device"},
    {"b_rank", [](OpInputs& in) { in.b = in.b.flatten(); },
     "b must have 3 dimensions [G, N, D], got shape [24]"},
    {"b_gates", [](OpInputs& in) { in.b = in.b.narrow(0, 0, 3); },
     "b has shape [3, 2, 3] but expected [4, 2, 3] [G, N, D]: lstm has 4 biases"},
    {"b_dtype", [](OpInputs& in) { in.b = in.b.to(torch::kHalf); },
     "b has dtype Half but Wx has dtype Double"},
    {"initial_rank", [](OpInputs& in) { in.initial = in.initial.squeeze(2); },
     "initial_states must have 5 dimensions [S, B, 1, N, D], got shape [2, 2, 2, 3]"},
    {"initial_states_count", [](OpInputs& in) { in.initial = in.initial.narrow(0, 0, 1); },
     "initial_states has shape [1, 2, 1, 2, 3] but expected [2, 2, 1, 2, 3] [S, B, 1, N, D]: lstm has 2 states"},
    {"initial_batch", [](OpInputs& in) { in.initial = in.initial.narrow(1, 0, 1); },
     "initial_states has shape [2, 1, 1, 2, 3] but expected [2, 2, 1, 2, 3]"},
    {"initial_time_dim", [](OpInputs& in) { in.initial = in.initial.expand({2, 2, 3, 2, 3}); },
     "initial_states has shape [2, 2, 3, 2, 3] but expected [2, 2, 1, 2, 3]"},
    {"reset_undefined", [](OpInputs& in) { in.options.reset_mask = torch::Tensor(); },
     "reset_mask is an undefined tensor"},
    {"reset_shape", [](OpInputs& in) { in.options.reset_mask = torch::zeros({2, 4}, torch::kBool); },
     "reset_mask has shape [2, 4] but expected [2, 3] [B, T]: B and T must match Wx"},
    {"reset_dtype", [](OpInputs& in) { in.options.reset_mask = torch::zeros({2, 3}, torch::kInt); },
     "reset_mask has dtype Int but must be bool"},
    {"negative_gradient_clip", [](OpInputs& in) { in.options.gradient_recurrent_clip = -1; },
     "gradient_recurrent_clip is -1; it must be >= 0"},
    {"nan_forward_clip", [](OpInputs& in) { in.options.forward_clip = std::nan(""); },
     "forward_clip is nan; it must be >= 0"},
    {"gru_bias_count",
     [](OpInputs& in) {
       in.options.cell = Cell::kGru;  // 3 gates read Wx and R, but 4 biases
       in.wx = in.wx.narrow(2, 0, 3);
       in.r = in.r.narrow(0, 0, 3);
       in.b = in.b.narrow(0, 0, 3);
       in.initial = in.initial.narrow(0, 0, 1);
     },
     "b has shape [3, 2, 3] but expected [4, 2, 3] [G, N, D]: gru has 4 biases"},
    {"fused_on_cpu", [](OpInputs& in) { in.options.backend = Backend::kFused; },
     "the fused backend runs on CUDA tensors only"},
    {"alternating_on_cpu", [](OpInputs& in) { in.options.backend = Backend::kAlternating; },
     "the alternating backend runs on CUDA tensors only"},
};

class ValidationTest : public ::testing::TestWithParam<Case> {};

TEST_P(ValidationTest, RejectsWithAClearMessage) {
  const Case& c = GetParam();
  OpInputs in = random_inputs(Cell::kLstm, 2, 3, 2, 3);
  c.break_it(in);
  try {
    in.run();
    FAIL() << "no error for case " << c.name;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos)
        << "message: " << e.what() << "\nexpected to contain: " << c.message;
  }
}

INSTANTIATE_TEST_SUITE_P(MalformedInputs, ValidationTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Validation, NamesParseErrors) {
  EXPECT_EQ(parse_cell("slstm"), Cell::kSlstm);
  EXPECT_EQ(parse_backend("auto"), Backend::kAuto);
  EXPECT_THROW(parse_cell("lstn"), InputError);
  try {
    parse_backend("cudnn");
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown backend 'cudnn'; choose one of vanilla"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace flashrnn::testing

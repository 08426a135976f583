#include "validate.h"

#include <sstream>
#include <string>
#include <vector>

#include <ATen/ATen.h>

namespace flashrnn {

namespace {

// Builds the message from pieces: fail("Wx has shape ", shape, ...).
template <class... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  std::ostringstream s;
  s << "flashrnn: ";
  (s << ... << parts);
  throw InputError(s.str());
}

void check_rank(const at::Tensor& t, const char* name, int64_t rank, const char* layout) {
  if (t.dim() != rank)
    fail(name, " must have ", rank, " dimensions ", layout, ", got shape ", shape_of(t));
}

// Expected sizes per dimension (-1 = any); names the first mismatch.
void check_shape(const at::Tensor& t, const char* name, const std::vector<int64_t>& expected,
                 const char* layout, const char* why) {
  for (size_t i = 0; i < expected.size(); ++i) {
    if (expected[i] >= 0 && t.size(i) != expected[i]) {
      std::ostringstream want;
      want << "[";
      for (size_t j = 0; j < expected.size(); ++j)
        want << (j ? ", " : "") << (expected[j] >= 0 ? std::to_string(expected[j]) : "*");
      want << "]";
      fail(name, " has shape ", shape_of(t), " but expected ", want.str(), " ", layout, ": ",
           why);
    }
  }
}

// R, b and the initial states live on Wx's device and take Wx's dtype, or
// float32 when Wx is half precision (fp32 master weights, fp32 carried states).
void check_same_device_and_dtype(const at::Tensor& t, const char* name, const at::Tensor& wx) {
  if (t.device() != wx.device())
    fail(name, " is on ", t.device().str(), " but Wx is on ", wx.device().str(),
         "; all tensors must be on one device");
  const bool half_wx = wx.scalar_type() == at::kBFloat16 || wx.scalar_type() == at::kHalf;
  if (t.scalar_type() != wx.scalar_type() && !(half_wx && t.scalar_type() == at::kFloat))
    fail(name, " has dtype ", t.scalar_type(), " but Wx has dtype ", wx.scalar_type(),
         "; R, b and initial_states take Wx's dtype (or float32 when Wx is bfloat16 or "
         "float16)");
}

}  // namespace

void validate_inputs(const at::Tensor& Wx, const at::Tensor& R, const at::Tensor& b,
                     const std::optional<at::Tensor>& initial_states, const Options& options) {
  const CellLayout layout = cell_layout(options.cell);
  const std::string cell = std::string(to_string(options.cell));

  for (const auto& [t, name] : {std::pair{&Wx, "Wx"}, {&R, "R"}, {&b, "b"}})
    if (!t->defined()) fail(name, " is an undefined tensor");
  const auto type = Wx.scalar_type();
  if (type != at::kFloat && type != at::kDouble && type != at::kHalf && type != at::kBFloat16)
    fail("Wx has dtype ", type, "; supported are float32, float64, float16 and bfloat16");

  if (!Wx.device().is_cpu() && !Wx.device().is_cuda())
    fail("Wx is on ", Wx.device().str(), "; flashrnn runs on cpu and cuda devices");
  check_rank(Wx, "Wx", 5, "[B, T, G, N, D]");
  const int64_t B = Wx.size(0), T = Wx.size(1), N = Wx.size(3), D = Wx.size(4);
  const std::string gates_why = cell + " has " + std::to_string(layout.gates) + " gates";
  check_shape(Wx, "Wx", {-1, -1, layout.gates, -1, -1}, "[B, T, G, N, D]", gates_why.c_str());
  if (T == 0) fail("Wx has shape ", shape_of(Wx), ": the sequence length T must be at least 1");
  if (B == 0 || N == 0 || D == 0)
    fail("Wx has shape ", shape_of(Wx), ": B, N and D must be at least 1");

  check_rank(R, "R", 4, "[G, N, D, D]");
  check_same_device_and_dtype(R, "R", Wx);
  check_shape(R, "R", {layout.gates, -1, -1, -1}, "[G, N, D, D]", gates_why.c_str());
  if (R.size(2) != R.size(3))
    fail("R has shape ", shape_of(R), " but each head's matrix must be square, [G, N, D, D]");
  check_shape(R, "R", {layout.gates, N, D, D}, "[G, N, D, D]",
              "heads N and head dimension D must match Wx");

  check_rank(b, "b", 3, "[G, N, D]");
  check_same_device_and_dtype(b, "b", Wx);
  const std::string biases_why = cell + " has " + std::to_string(layout.biases) + " biases";
  check_shape(b, "b", {layout.biases, N, D}, "[G, N, D]", biases_why.c_str());

  if (initial_states) {
    const at::Tensor& s = *initial_states;
    if (!s.defined()) fail("initial_states is an undefined tensor; pass std::nullopt for zeros");
    check_rank(s, "initial_states", 5, "[S, B, 1, N, D]");
    check_same_device_and_dtype(s, "initial_states", Wx);
    const std::string why = cell + " has " + std::to_string(layout.states) +
                            " states; B, N, D must match Wx";
    check_shape(s, "initial_states", {layout.states, B, 1, N, D}, "[S, B, 1, N, D]", why.c_str());
  }

  if (options.reset_mask) {
    const at::Tensor& m = *options.reset_mask;
    if (!m.defined()) fail("reset_mask is an undefined tensor; leave it unset for no resets");
    if (m.scalar_type() != at::kBool)
      fail("reset_mask has dtype ", m.scalar_type(), " but must be bool");
    if (m.device() != Wx.device())
      fail("reset_mask is on ", m.device().str(), " but Wx is on ", Wx.device().str());
    check_rank(m, "reset_mask", 2, "[B, T]");
    check_shape(m, "reset_mask", {B, T}, "[B, T]", "B and T must match Wx");
  }

  if (!(options.gradient_recurrent_clip >= 0))
    fail("gradient_recurrent_clip is ", options.gradient_recurrent_clip,
         "; it must be >= 0 (0 disables it)");
  if (!(options.forward_clip >= 0))
    fail("forward_clip is ", options.forward_clip, "; it must be >= 0 (0 disables it)");
}

}  // namespace flashrnn

#include "flashtrain/models/slstm_mixer.h"

#include <torch/torch.h>

#include <string>

#include "flashrnn/flashrnn.h"
#include "flashtrain/models/errors.h"
#include "compute_dtype.h"
#include "headwise_gates.h"
#include "init.h"
#include "op_states.h"

namespace flashtrain::models {

namespace {

constexpr char kName[] = "slstm block";
constexpr int64_t kForgetGateSlot = 1;  // gate order i, f, z, o
constexpr int64_t kStates = 4;          // h, c, n, m

int64_t checked_head_dim(int64_t d_model, const SlstmBlockOptions& o) {
  const std::string name = kName;
  if (o.num_heads < 1 || d_model % o.num_heads != 0) {
    throw OptionsError(name + ": num_heads " + std::to_string(o.num_heads) +
                       " must be positive and divide d_model " + std::to_string(d_model) +
                       " (the sLSTM's hidden width is d_model)");
  }
  if (o.conv_kernel < 0) {
    throw OptionsError(name + ": conv_kernel must be positive (or 0 for no conv), got " +
                       std::to_string(o.conv_kernel));
  }
  if (o.forget_bias_min > o.forget_bias_max) {
    throw OptionsError(name + ": forget_bias_min " + std::to_string(o.forget_bias_min) +
                       " is above forget_bias_max " + std::to_string(o.forget_bias_max));
  }
  if (o.recurrent_init_scale < 0.0) {
    throw OptionsError(name + ": recurrent_init_scale must not be negative, got " +
                       std::to_string(o.recurrent_init_scale));
  }
  return d_model / o.num_heads;
}

}  // namespace

SlstmMixer::SlstmMixer(const BlockContext& context, const SlstmBlockOptions& options)
    : d_model_(context.d_model),
      num_heads_(options.num_heads),
      head_dim_(checked_head_dim(context.d_model, options)),
      backend_(options.backend),
      recompute_(options.recompute) {
  const int64_t heads = num_heads_, d = head_dim_;
  if (options.conv_kernel > 0) {
    conv_ = register_module("conv", CausalDepthwiseConv(d_model_, options.conv_kernel));
  }
  igate_ = register_module("igate", HeadwiseLinear(heads, d, d));
  fgate_ = register_module("fgate", HeadwiseLinear(heads, d, d));
  zgate_ = register_module("zgate", HeadwiseLinear(heads, d, d));
  ogate_ = register_module("ogate", HeadwiseLinear(heads, d, d));
  for (const HeadwiseLinear& gate : {igate_, fgate_, zgate_, ogate_})
    init::small_(gate->weight(), d_model_);
  r_ = register_parameter("r", torch::empty({4, heads, d, d}));
  init::uniform_(r_, options.recurrent_init_scale / std::sqrt(double(d)));
  b_ = register_parameter("b", torch::zeros({4, heads, d}));
  init::spaced_gate_bias_(b_, kForgetGateSlot, options.forget_bias_min, options.forget_bias_max);
  group_norm_ = register_module("group_norm", HeadwiseNorm(heads, d, context.norm_eps));
}

torch::Tensor SlstmMixer::gate_inputs(const torch::Tensor& x, const torch::Tensor& x_conv) {
  // i and f see the conv path (local context), z and o the block input itself.
  const torch::Tensor weights =
      torch::stack({igate_->weight(), fgate_->weight(), zgate_->weight(), ogate_->weight()});
  return headwise_gate_projection(x_conv, x, weights);
}

flashrnn::Options SlstmMixer::op_options() const {
  flashrnn::Options options;
  options.cell = flashrnn::Cell::kSlstm;
  options.backend = backend_;
  options.recompute = recompute_;
  options.output_h_only = true;  // the block reads h; the carried states come from last_states
  return options;
}

torch::Tensor SlstmMixer::output(const torch::Tensor& h) { return group_norm_(h); }

torch::Tensor SlstmMixer::forward(const torch::Tensor& x_in) {
  // One cast to the compute dtype (autocast's, else x's) for the conv and the
  // projections: the custom ops and the stacked matmul input see no autocast.
  const torch::Tensor x = x_in.to(compute_dtype(x_in));
  const torch::Tensor x_conv = conv_ ? conv_(x) : x;
  const flashrnn::Result result =
      flashrnn::flashrnn(gate_inputs(x, x_conv), r_, b_, std::nullopt, op_options());
  return output(result.states_all.squeeze(0));  // h [B, T, N, D]
}

StepOutput SlstmMixer::forward_step(const torch::Tensor& x_in, const BlockState& state) {
  const torch::Tensor x_t = x_in.to(compute_dtype(x_in));
  const int64_t batch = x_t.size(0);
  const torch::Tensor& states =
      state_entry(state, "states", {batch, kStates, num_heads_, head_dim_}, kName);
  StepOutput out;
  torch::Tensor x_conv = x_t;
  if (conv_) {
    const torch::Tensor& window =
        state_entry(state, "conv_window", {batch, conv_->kernel_size() - 1, d_model_}, kName);
    auto [y, next_window] = conv_->step(x_t, window);
    x_conv = y.to(x_t.scalar_type());
    out.state["conv_window"] = next_window;
  }
  const flashrnn::Result result =
      flashrnn::flashrnn(gate_inputs(x_t.unsqueeze(1), x_conv.unsqueeze(1)), r_, b_,
                         op_initial_states(states), op_options());
  out.y = output(result.last_states[0].squeeze(1));  // h [B, N, D], Wx's dtype
  out.state["states"] = carried_states(result, states);
  return out;
}

ChunkOutput SlstmMixer::forward_chunk(const torch::Tensor& x_in, const BlockState& state) {
  const torch::Tensor x = x_in.to(compute_dtype(x_in));
  const int64_t batch = x.size(0), steps = x.size(1);
  const torch::Tensor& states =
      state_entry(state, "states", {batch, kStates, num_heads_, head_dim_}, kName);
  ChunkOutput out;
  torch::Tensor x_conv = x;
  if (conv_) {
    // The convolution over the carried window and the chunk: its outputs at
    // the chunk's positions see the window as their left context.
    const int64_t k = conv_->kernel_size() - 1;
    const torch::Tensor& window = state_entry(state, "conv_window", {batch, k, d_model_}, kName);
    const torch::Tensor joined = torch::cat({window.to(x.scalar_type()), x}, 1);
    x_conv = conv_(joined).narrow(1, k, steps).to(x.scalar_type());
    out.state["conv_window"] = joined.narrow(1, steps, k).to(window.scalar_type());
  }
  const flashrnn::Result result =
      flashrnn::flashrnn(gate_inputs(x, x_conv), r_, b_, op_initial_states(states), op_options());
  out.y = output(result.states_all.squeeze(0));  // h [B, T, N, D]
  out.state["states"] = carried_states(result, states);
  return out;
}

BlockState SlstmMixer::initial_state(int64_t batch, const torch::TensorOptions& options) const {
  // n = 0 marks the first step for the op (m starts from the first input gate).
  BlockState state{{"states", torch::zeros({batch, kStates, num_heads_, head_dim_}, options)}};
  if (conv_)
    state["conv_window"] = torch::zeros({batch, conv_->kernel_size() - 1, d_model_}, options);
  return state;
}

double SlstmMixer::forward_flops_per_token(int64_t /*context*/) const {
  const double heads = num_heads_, d = head_dim_;
  const double conv = conv_ ? 2.0 * double(conv_->kernel_size()) * double(d_model_) : 0.0;
  const double gate_projections = 4.0 * 2.0 * heads * d * d;
  const double recurrent = 4.0 * 2.0 * heads * d * d;
  return conv + gate_projections + recurrent;
}

}  // namespace flashtrain::models

#include "flashtrain/models/recurrent_mixer.h"

#include <torch/torch.h>

#include <cmath>
#include <string>

#include "flashtrain/models/errors.h"
#include "flashtrain/models/option_defaults.h"
#include "init.h"
#include "op_states.h"

namespace flashtrain::models {

namespace {

// The gate slot (in Wx, R and b) of the gate that keeps the state: LSTM's
// forget gate (i, f, z, o) and GRU's update gate (r, z, n) are both slot 1.
constexpr int64_t kRetainGateSlot = 1;

std::string block_name(flashrnn::Cell cell) {
  return std::string(flashrnn::to_string(cell)) + " block";
}

int64_t resolved_head_dim(flashrnn::Cell cell, int64_t d_model, const RecurrentBlockOptions& o) {
  const std::string name = block_name(cell);
  if (o.num_heads < 1)
    throw OptionsError(name + ": num_heads must be positive, got " + std::to_string(o.num_heads));
  if (o.head_dim < 0)
    throw OptionsError(name + ": head_dim must be positive (or 0 for d_model / num_heads), got " +
                       std::to_string(o.head_dim));
  const bool must_divide = o.head_dim == 0 || o.block_diagonal_input;
  if (must_divide && d_model % o.num_heads != 0) {
    throw OptionsError(name + ": d_model " + std::to_string(d_model) +
                       " is not divisible by num_heads " + std::to_string(o.num_heads) +
                       (o.head_dim == 0 ? " (head_dim 0 means d_model / num_heads)"
                                        : " (block_diagonal_input splits d_model over the heads)"));
  }
  if (const std::string problem =
          defaults::retain_bias_problem(o.retain_bias_min, o.retain_bias_max, "retain_bias_min", "retain_bias_max");
      !problem.empty())
    throw OptionsError(name + ": " + problem);
  if (o.recurrent_init_scale < 0.0) {
    throw OptionsError(name + ": recurrent_init_scale must not be negative, got " +
                       std::to_string(o.recurrent_init_scale));
  }
  return o.head_dim == 0 ? d_model / o.num_heads : o.head_dim;
}

// A plain layer hands its h on as the next layer's input: it must be d_model wide.
void check_plain_width(flashrnn::Cell cell, int64_t d_model, int64_t num_heads, int64_t head_dim) {
  if (num_heads * head_dim == d_model) return;
  throw OptionsError("plain " + std::string(flashrnn::to_string(cell)) +
                     " layer: num_heads x head_dim = " + std::to_string(num_heads) + " x " +
                     std::to_string(head_dim) + " = " + std::to_string(num_heads * head_dim) +
                     " must equal d_model (" + std::to_string(d_model) +
                     "): its output is h over its heads, with no output projection");
}

}  // namespace

RecurrentMixer::RecurrentMixer(flashrnn::Cell cell, const BlockContext& context,
                               const RecurrentBlockOptions& options)
    : cell_(cell),
      layout_(flashrnn::cell_layout(cell)),
      d_model_(context.d_model),
      num_heads_(options.num_heads),
      head_dim_(resolved_head_dim(cell, context.d_model, options)),
      block_diagonal_(options.block_diagonal_input),
      plain_(context.structure == Structure::kPlain),
      backend_(options.backend),
      recompute_(options.recompute) {
  if (cell == flashrnn::Cell::kSlstm) {
    throw OptionsError("RecurrentMixer runs lstm, gru and elman cells; the sLSTM has SlstmMixer");
  }
  if (plain_) check_plain_width(cell, d_model_, num_heads_, head_dim_);
  const int64_t gates = layout_.gates, heads = num_heads_, d = head_dim_;
  if (block_diagonal_) {
    wx_headwise_ = register_module("wx", HeadwiseLinear(heads, d_model_ / heads, gates * d));
    init::small_(wx_headwise_->weight(), d_model_);
  } else {
    wx_dense_ = register_module(
        "wx", torch::nn::Linear(torch::nn::LinearOptions(d_model_, gates * heads * d).bias(false)));
    init::small_(wx_dense_->weight, d_model_);
  }
  r_ = register_parameter("r", torch::empty({gates, heads, d, d}));
  init::uniform_(r_, options.recurrent_init_scale / std::sqrt(double(d)));
  b_ = register_parameter("b", torch::zeros({layout_.biases, heads, d}));
  if (cell == flashrnn::Cell::kLstm || cell == flashrnn::Cell::kGru) {
    init::spaced_gate_bias_(b_, kRetainGateSlot, options.retain_bias_min, options.retain_bias_max);
  }
  if (plain_) return;
  out_proj_ = register_module(
      "out_proj", torch::nn::Linear(torch::nn::LinearOptions(heads * d, d_model_).bias(false)));
  init::by_depth_(out_proj_->weight, d_model_, context.num_blocks);
}

torch::Tensor RecurrentMixer::output(const torch::Tensor& h) {
  return plain_ ? h : out_proj_(h);
}

torch::Tensor RecurrentMixer::gate_inputs(const torch::Tensor& x) {
  const int64_t batch = x.size(0), steps = x.size(1);
  if (!block_diagonal_) {
    return wx_dense_(x).view({batch, steps, layout_.gates, num_heads_, head_dim_});
  }
  // Head-wise output is grouped by head, [.., N, G, D]; the op wants [.., G, N, D].
  return wx_headwise_(x).view({batch, steps, num_heads_, layout_.gates, head_dim_}).transpose(2, 3);
}

flashrnn::Options RecurrentMixer::op_options() const {
  flashrnn::Options options;
  options.cell = cell_;
  options.backend = backend_;
  options.recompute = recompute_;
  options.output_h_only = true;  // the block reads h; the carried states come from last_states
  return options;
}

torch::Tensor RecurrentMixer::forward(const torch::Tensor& x) {
  const flashrnn::Result result = flashrnn::flashrnn(gate_inputs(x), r_, b_, std::nullopt, op_options());
  const torch::Tensor h = result.states_all.squeeze(0);  // [B, T, N, D]
  return output(h.flatten(2));
}

StepOutput RecurrentMixer::forward_step(const torch::Tensor& x_t, const BlockState& state) {
  const int64_t batch = x_t.size(0);
  const torch::Tensor& states = state_entry(
      state, "states", {batch, layout_.states, num_heads_, head_dim_}, block_name(cell_));
  const flashrnn::Result result = flashrnn::flashrnn(gate_inputs(x_t.unsqueeze(1)), r_, b_,
                                                     op_initial_states(states), op_options());
  const torch::Tensor h = result.last_states[0].squeeze(1);  // [B, N, D], Wx's dtype
  return {output(h.flatten(1)), {{"states", carried_states(result, states)}}};
}

ChunkOutput RecurrentMixer::forward_chunk(const torch::Tensor& x, const BlockState& state) {
  const int64_t batch = x.size(0);
  const torch::Tensor& states = state_entry(
      state, "states", {batch, layout_.states, num_heads_, head_dim_}, block_name(cell_));
  const flashrnn::Result result =
      flashrnn::flashrnn(gate_inputs(x), r_, b_, op_initial_states(states), op_options());
  const torch::Tensor h = result.states_all.squeeze(0);  // [B, T, N, D]
  return {output(h.flatten(2)), {{"states", carried_states(result, states)}}};
}

BlockState RecurrentMixer::initial_state(int64_t batch, const torch::TensorOptions& options) const {
  return {{"states", torch::zeros({batch, layout_.states, num_heads_, head_dim_}, options)}};
}

double RecurrentMixer::forward_flops_per_token(int64_t /*context*/) const {
  const double gates = layout_.gates, heads = num_heads_, d = head_dim_, d_model = d_model_;
  const double input_in = block_diagonal_ ? d_model / heads : d_model;  // per output unit
  const double input_projection = 2.0 * input_in * gates * heads * d;
  const double recurrent = 2.0 * gates * heads * d * d;
  const double output_projection = plain_ ? 0.0 : 2.0 * heads * d * d_model;
  return input_projection + recurrent + output_projection;
}

}  // namespace flashtrain::models

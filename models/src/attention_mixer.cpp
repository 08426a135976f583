#include "flashtrain/models/attention_mixer.h"

#include <torch/torch.h>

#include <string>

#include "flashtrain/models/errors.h"
#include "flashtrain/models/rotary.h"
#include "init.h"

namespace flashtrain::models {

namespace {

constexpr char kName[] = "transformer block";

int64_t checked_head_dim(int64_t d_model, const TransformerBlockOptions& o) {
  const std::string name = kName;
  if (o.num_heads < 1 || d_model % o.num_heads != 0) {
    throw OptionsError(name + ": num_heads " + std::to_string(o.num_heads) +
                       " must be positive and divide d_model " + std::to_string(d_model));
  }
  const int64_t head_dim = d_model / o.num_heads;
  if (head_dim % 2 != 0) {
    throw OptionsError(name + ": head_dim d_model / num_heads = " + std::to_string(head_dim) +
                       " must be even (rotary positions rotate pairs of units)");
  }
  if (!(o.rope_theta > 1.0)) {
    throw OptionsError(name + ": rope_theta must be above 1, got " + std::to_string(o.rope_theta));
  }
  return head_dim;
}

}  // namespace

AttentionMixer::AttentionMixer(const BlockContext& context, const TransformerBlockOptions& options)
    : d_model_(context.d_model),
      num_heads_(options.num_heads),
      head_dim_(checked_head_dim(context.d_model, options)),
      rope_theta_(options.rope_theta) {
  const auto square = torch::nn::LinearOptions(d_model_, d_model_).bias(false);
  wq_ = register_module("wq", torch::nn::Linear(square));
  wk_ = register_module("wk", torch::nn::Linear(square));
  wv_ = register_module("wv", torch::nn::Linear(square));
  wo_ = register_module("wo", torch::nn::Linear(square));
  for (const torch::nn::Linear& w : {wq_, wk_, wv_}) init::small_(w->weight, d_model_);
  init::by_depth_(wo_->weight, d_model_, context.num_blocks);
}

std::array<torch::Tensor, 3> AttentionMixer::project(const torch::Tensor& x,
                                                     int64_t first_position) {
  const std::vector<int64_t> heads{x.size(0), x.size(1), num_heads_, head_dim_};
  const torch::Tensor q = apply_rotary(wq_(x).view(heads), first_position, rope_theta_);
  const torch::Tensor k = apply_rotary(wk_(x).view(heads), first_position, rope_theta_);
  const torch::Tensor v = wv_(x).view(heads);
  return {q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)};
}

torch::Tensor AttentionMixer::output(const torch::Tensor& attended) {
  return wo_(attended.transpose(1, 2).flatten(2));
}

torch::Tensor AttentionMixer::forward(const torch::Tensor& x) {
  const auto [q, k, v] = project(x, 0);
  return output(at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0,
                                                 /*is_causal=*/true));
}

std::pair<torch::Tensor, torch::Tensor> AttentionMixer::kv_cache(const BlockState& state, int64_t batch) const {
  const std::vector<int64_t> cache_shape{batch, num_heads_, -1, head_dim_};
  const torch::Tensor& keys = state_entry(state, "keys", cache_shape, kName);
  const torch::Tensor& values = state_entry(state, "values", cache_shape, kName);
  if (keys.size(2) != values.size(2)) {
    throw InputError(std::string(kName) + ": the KV cache holds " + std::to_string(keys.size(2)) +
                     " keys but " + std::to_string(values.size(2)) + " values");
  }
  return {keys, values};
}

StepOutput AttentionMixer::forward_step(const torch::Tensor& x_t, const BlockState& state) {
  const int64_t batch = x_t.size(0);
  const auto [keys, values] = kv_cache(state, batch);
  const auto [q, k, v] = project(x_t.unsqueeze(1), /*first_position=*/keys.size(2));
  const torch::Tensor all_keys = torch::cat({keys, k}, 2);
  const torch::Tensor all_values = torch::cat({values, v}, 2);
  // One query, the newest position: every cached key is in its causal past.
  const torch::Tensor attended = at::scaled_dot_product_attention(q, all_keys, all_values);
  return {output(attended).squeeze(1), {{"keys", all_keys}, {"values", all_values}}};
}

// The chunk's queries against the cache and the chunk's own keys at once: query
// i (position past + i) sees keys 0 .. past + i.
ChunkOutput AttentionMixer::forward_chunk(const torch::Tensor& x, const BlockState& state) {
  const int64_t batch = x.size(0), steps = x.size(1);
  const auto [keys, values] = kv_cache(state, batch);
  const int64_t past = keys.size(2);
  const auto [q, k, v] = project(x, /*first_position=*/past);
  const torch::Tensor all_keys = torch::cat({keys, k}, 2);
  const torch::Tensor all_values = torch::cat({values, v}, 2);
  const torch::Tensor sees =
      torch::ones({steps, past + steps}, torch::TensorOptions(torch::kBool).device(x.device())).tril(past);
  const torch::Tensor attended = at::scaled_dot_product_attention(q, all_keys, all_values, sees);
  return {output(attended), {{"keys", all_keys}, {"values", all_values}}};
}

BlockState AttentionMixer::initial_state(int64_t batch, const torch::TensorOptions& options) const {
  const torch::Tensor empty = torch::zeros({batch, num_heads_, 0, head_dim_}, options);
  return {{"keys", empty}, {"values", empty}};
}

double AttentionMixer::forward_flops_per_token(int64_t context) const {
  const double d_model = d_model_;
  return 2.0 * 4.0 * d_model * d_model + 4.0 * d_model * double(context);
}

}  // namespace flashtrain::models

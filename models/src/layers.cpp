// The small layers the blocks are built from: norms, the gated feed-forward,
// head-wise linear maps, the causal depthwise conv and rotary positions.
#include <torch/torch.h>

#include <cmath>

#include "flashrnn/layers.h"
#include "flashtrain/models/causal_conv.h"
#include "flashtrain/models/errors.h"
#include "flashtrain/models/feed_forward.h"
#include "flashtrain/models/headwise_linear.h"
#include "flashtrain/models/norm.h"
#include "flashtrain/models/rotary.h"
#include "compute_dtype.h"
#include "init.h"

namespace flashtrain::models {

NormImpl::NormImpl(int64_t dim, NormKind kind, double eps) : kind_(kind), eps_(eps) {
  weight_ = register_parameter("weight", torch::ones({dim}));
}

torch::Tensor NormImpl::forward(const torch::Tensor& x) {
  const int64_t dim = weight_.size(0);
  if (kind_ == NormKind::kRmsNorm) return at::rms_norm(x, {dim}, weight_, eps_);
  // A layer norm is a head-wise norm of one head; its output goes straight
  // to the compute dtype (no float32 copy for autocast to cast).
  return flashrnn::headwise_norm(x, weight_, /*num_heads=*/1, eps_, compute_dtype(x));
}

AddedAndNormed NormImpl::add_and_norm(const torch::Tensor& x, const torch::Tensor& delta) {
  if (kind_ == NormKind::kRmsNorm) {
    const torch::Tensor sum = delta.defined() ? x + delta : x;
    return {sum, forward(sum)};
  }
  const flashrnn::ResidualNorm r =
      flashrnn::residual_add_norm(x, delta, weight_, /*num_heads=*/1, eps_, compute_dtype(x));
  return {r.sum, r.normed};
}

HeadwiseNormImpl::HeadwiseNormImpl(int64_t num_heads, int64_t head_dim, double eps)
    : num_heads_(num_heads), head_dim_(head_dim), eps_(eps) {
  weight_ = register_parameter("weight", torch::ones({num_heads * head_dim}));
}

torch::Tensor HeadwiseNormImpl::forward(const torch::Tensor& x) {
  return flashrnn::headwise_norm(x.flatten(-2), weight_, num_heads_, eps_);
}

int64_t GatedFeedForwardImpl::hidden_dim(int64_t d_model, const FeedForwardOptions& options) {
  if (options.multiple_of < 1) {
    throw OptionsError("ffn.multiple_of must be at least 1, got " +
                       std::to_string(options.multiple_of));
  }
  const double wanted = options.projection_factor * double(d_model);
  const auto multiples = int64_t(std::ceil(wanted / double(options.multiple_of)));
  return multiples * options.multiple_of;
}

GatedFeedForwardImpl::GatedFeedForwardImpl(const BlockContext& context,
                                           const FeedForwardOptions& options)
    : d_model_(context.d_model), hidden_dim_(hidden_dim(context.d_model, options)) {
  if (!(options.projection_factor > 0.0)) {
    throw OptionsError("ffn.projection_factor must be positive, got " +
                       std::to_string(options.projection_factor));
  }
  const auto no_bias = [](int64_t in, int64_t out) {
    return torch::nn::LinearOptions(in, out).bias(false);
  };
  gate_ = register_module("gate", torch::nn::Linear(no_bias(d_model_, hidden_dim_)));
  up_ = register_module("up", torch::nn::Linear(no_bias(d_model_, hidden_dim_)));
  down_ = register_module("down", torch::nn::Linear(no_bias(hidden_dim_, d_model_)));
  init::small_(gate_->weight, d_model_);
  init::small_(up_->weight, d_model_);
  init::by_depth_(down_->weight, d_model_, context.num_blocks);
}

torch::Tensor GatedFeedForwardImpl::forward(const torch::Tensor& x_in) {
  const torch::Tensor x = x_in.to(compute_dtype(x_in));  // one cast for gate and up
  return down_(flashrnn::silu_mul(gate_(x), up_(x)));
}

double GatedFeedForwardImpl::forward_flops_per_token() const {
  return 2.0 * 3.0 * double(d_model_) * double(hidden_dim_);
}

HeadwiseLinearImpl::HeadwiseLinearImpl(int64_t num_heads, int64_t in_per_head, int64_t out_per_head)
    : num_heads_(num_heads), in_per_head_(in_per_head), out_per_head_(out_per_head) {
  weight_ = register_parameter("weight", torch::empty({num_heads, out_per_head, in_per_head}));
}

torch::Tensor HeadwiseLinearImpl::forward(const torch::Tensor& x) {
  auto heads_shape = x.sizes().vec();
  heads_shape.back() = num_heads_;
  heads_shape.push_back(in_per_head_);
  const torch::Tensor y = torch::einsum("...ni,noi->...no", {x.reshape(heads_shape), weight_});
  return y.flatten(-2);
}

CausalDepthwiseConvImpl::CausalDepthwiseConvImpl(int64_t channels, int64_t kernel_size)
    : channels_(channels), kernel_size_(kernel_size) {
  weight_ = register_parameter("weight", torch::empty({channels, 1, kernel_size}));
  bias_ = register_parameter("bias", torch::empty({channels}));
  const double bound = 1.0 / std::sqrt(double(kernel_size));  // nn.Conv1d's, fan_in = K
  init::uniform_(weight_, bound);
  init::uniform_(bias_, bound);
}

torch::Tensor CausalDepthwiseConvImpl::forward(const torch::Tensor& x) {
  return flashrnn::causal_conv_silu(x, weight_, bias_);
}

std::pair<torch::Tensor, torch::Tensor> CausalDepthwiseConvImpl::step(const torch::Tensor& x_t,
                                                                      const torch::Tensor& window) {
  const torch::Tensor inputs = torch::cat({window, x_t.unsqueeze(1)}, 1);  // [B, K, C]
  const torch::Tensor taps = weight_.squeeze(1).t();                       // [K, C]
  const torch::Tensor y = torch::silu((inputs * taps).sum(1) + bias_);
  return {y, inputs.narrow(1, 1, kernel_size_ - 1)};
}

at::Tensor apply_rotary(const at::Tensor& x, int64_t first_position, double theta) {
  const int64_t steps = x.size(1), half = x.size(3) / 2;
  const auto exact = torch::TensorOptions().dtype(torch::kDouble).device(x.device());
  const torch::Tensor frequencies =
      torch::pow(theta, torch::arange(0, half, exact) * (-2.0 / double(x.size(3))));
  const torch::Tensor angles =
      torch::arange(first_position, first_position + steps, exact).unsqueeze(1) * frequencies;
  const torch::Tensor cos = angles.cos().to(x.scalar_type()).view({1, steps, 1, half});
  const torch::Tensor sin = angles.sin().to(x.scalar_type()).view({1, steps, 1, half});
  const torch::Tensor x1 = x.narrow(-1, 0, half), x2 = x.narrow(-1, half, half);
  return torch::cat({x1 * cos - x2 * sin, x2 * cos + x1 * sin}, -1);
}

}  // namespace flashtrain::models

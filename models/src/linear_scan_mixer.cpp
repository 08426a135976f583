#include "flashtrain/models/linear_scan_mixer.h"

#include <torch/torch.h>

#include <cmath>
#include <string>

#include "flashtrain/models/errors.h"
#include "init.h"

namespace flashtrain::models {

namespace {

constexpr char kName[] = "linear_scan block";

int64_t checked_hidden_dim(int64_t d_model, const LinearScanBlockOptions& o) {
  const std::string name = kName;
  if (o.hidden_dim < 0) {
    throw OptionsError(name + ": hidden_dim must be positive (or 0 for d_model), got " +
                       std::to_string(o.hidden_dim));
  }
  if (!(o.min_timescale > 1.0) || o.max_timescale < o.min_timescale) {
    throw OptionsError(name + ": need 1 < min_timescale <= max_timescale, got " +
                       std::to_string(o.min_timescale) + " and " + std::to_string(o.max_timescale));
  }
  return o.hidden_dim == 0 ? d_model : o.hidden_dim;
}

}  // namespace

LinearScanMixer::LinearScanMixer(const BlockContext& context, const LinearScanBlockOptions& options)
    : d_model_(context.d_model),
      hidden_dim_(checked_hidden_dim(context.d_model, options)),
      backend_(options.backend) {
  in_proj_ = register_module(
      "in_proj",
      torch::nn::Linear(torch::nn::LinearOptions(d_model_, 3 * hidden_dim_).bias(false)));
  init::small_(in_proj_->weight, d_model_);
  // a = sigmoid(bias) = 1 - 1/tau  <=>  bias = log(tau - 1), tau log-spaced.
  const torch::Tensor timescales = torch::logspace(std::log10(options.min_timescale),
                                                   std::log10(options.max_timescale), hidden_dim_);
  gate_bias_ = register_parameter("gate_bias", torch::log(timescales - 1.0));
  out_proj_ = register_module(
      "out_proj", torch::nn::Linear(torch::nn::LinearOptions(hidden_dim_, d_model_).bias(false)));
  init::by_depth_(out_proj_->weight, d_model_, context.num_blocks);
}

LinearScanMixer::ScanInputs LinearScanMixer::scan_inputs(const torch::Tensor& x) {
  const std::vector<torch::Tensor> parts = in_proj_(x).chunk(3, -1);
  const torch::Tensor a = torch::sigmoid(parts[0] + gate_bias_);
  return {a, (1.0 - a) * parts[1], parts[2]};
}

flashrnn::ScanOptions LinearScanMixer::scan_options() const {
  flashrnn::ScanOptions options;
  options.layout = flashrnn::ScanLayout::kBTD;
  options.backend = backend_;
  return options;
}

torch::Tensor LinearScanMixer::forward(const torch::Tensor& x) {
  const ScanInputs in = scan_inputs(x);
  const flashrnn::ScanResult scanned = flashrnn::scan(in.a, in.b, scan_options());
  return out_proj_(scanned.x * torch::silu(in.output_gate));
}

StepOutput LinearScanMixer::forward_step(const torch::Tensor& x_t, const BlockState& state) {
  const int64_t batch = x_t.size(0);
  const ScanInputs in = scan_inputs(x_t.unsqueeze(1));  // [B, 1, H]
  flashrnn::ScanOptions options = scan_options();
  options.x0 = state_entry(state, "x", {batch, hidden_dim_}, kName);
  const flashrnn::ScanResult scanned = flashrnn::scan(in.a, in.b, options);
  const torch::Tensor y = out_proj_(scanned.last * torch::silu(in.output_gate.squeeze(1)));
  return {y, {{"x", scanned.last}}};
}

// The chunk in one scan from the carried state.
ChunkOutput LinearScanMixer::forward_chunk(const torch::Tensor& x, const BlockState& state) {
  const ScanInputs in = scan_inputs(x);  // [B, T, H]
  flashrnn::ScanOptions options = scan_options();
  options.x0 = state_entry(state, "x", {x.size(0), hidden_dim_}, kName);
  const flashrnn::ScanResult scanned = flashrnn::scan(in.a, in.b, options);
  return {out_proj_(scanned.x * torch::silu(in.output_gate)), {{"x", scanned.last}}};
}

BlockState LinearScanMixer::initial_state(int64_t batch,
                                          const torch::TensorOptions& options) const {
  return {{"x", torch::zeros({batch, hidden_dim_}, options)}};
}

double LinearScanMixer::forward_flops_per_token(int64_t /*context*/) const {
  const double d_model = d_model_, hidden = hidden_dim_;
  const double projections = 2.0 * d_model * 3.0 * hidden + 2.0 * hidden * d_model;
  const double scan = 2.0 * hidden;  // one multiply-add per channel
  return projections + scan;
}

}  // namespace flashtrain::models

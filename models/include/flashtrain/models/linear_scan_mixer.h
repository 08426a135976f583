// The linear-scan mixer: a diagonal linear recurrence with an input-dependent
// gate, through flashrnn::scan. It cannot track state (its transition is
// diagonal and positive): the contrast case of the state-tracking study.
#pragma once

#include <torch/nn/modules/linear.h>

#include "flashrnn/scan.h"
#include "flashtrain/models/mixer.h"
#include "flashtrain/models/options.h"

namespace flashtrain::models {

// Per channel (H of them):
//   [a~, v, g] = in_proj(x)
//   a_t = sigmoid(a~_t + gate_bias)   in (0, 1)
//   x_t = a_t * x_{t-1} + (1 - a_t) * v_t
//   y_t = out_proj(x_t * silu(g_t))
// Feeding (1 - a_t) * v_t makes x_t a convex combination of past values, so the
// state stays within the range of v however long the memory (a near 1).
// Parameters: "in_proj.weight" [3H, d_model], "gate_bias" [H],
// "out_proj.weight" [d_model, H]. State: "x" [B, H].
class LinearScanMixer : public Mixer {
 public:
  LinearScanMixer(const BlockContext& context, const LinearScanBlockOptions& options);

  torch::Tensor forward(const torch::Tensor& x) override;
  StepOutput forward_step(const torch::Tensor& x_t, const BlockState& state) override;
  ChunkOutput forward_chunk(const torch::Tensor& x, const BlockState& state) override;
  BlockState initial_state(int64_t batch, const torch::TensorOptions& options) const override;
  double forward_flops_per_token(int64_t context) const override;

 private:
  struct ScanInputs {
    torch::Tensor a, b, output_gate;  // [B, T, H] each
  };
  ScanInputs scan_inputs(const torch::Tensor& x);
  flashrnn::ScanOptions scan_options() const;

  int64_t d_model_, hidden_dim_;
  flashrnn::ScanBackend backend_;
  torch::nn::Linear in_proj_{nullptr}, out_proj_{nullptr};
  torch::Tensor gate_bias_;
};

}  // namespace flashtrain::models

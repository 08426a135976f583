// A pre-norm residual block as xLSTM builds them:
//   h = x + mixer(mixer_norm(x));  y = h + ffn(ffn_norm(h))  (when it has a ffn)
// or, in a plain model (BlockContext::structure kPlain), the bare mixer of an
// lstm, gru or elman layer: y = mixer(x), its h over the heads.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <memory>

#include "flashtrain/models/block_kind.h"
#include "flashtrain/models/block_state.h"
#include "flashtrain/models/feed_forward.h"
#include "flashtrain/models/mixer.h"
#include "flashtrain/models/norm.h"
#include "flashtrain/models/options.h"

namespace flashtrain::models {

// The mixer of a block kind (RecurrentMixer, SlstmMixer, LinearScanMixer or
// AttentionMixer) built from that kind's options; invalid options throw
// OptionsError naming the block kind and the option.
std::shared_ptr<Mixer> make_mixer(BlockKind kind, const BlockContext& context,
                                  const BlockOptions& options);

// Parameters: "mixer_norm.weight", "mixer.*" (see the mixer's header), and with
// a feed-forward "ffn_norm.weight", "ffn.{gate,up,down}.weight". Plain: "mixer.*" only.
class ResidualBlockImpl : public torch::nn::Module {
 public:
  ResidualBlockImpl(BlockKind kind, const BlockContext& context, const BlockOptions& options);

  // x [B, T, d_model] -> [B, T, d_model].
  torch::Tensor forward(const torch::Tensor& x);
  // x_t [B, d_model] -> y_t [B, d_model] and the state after this token.
  StepOutput forward_step(const torch::Tensor& x_t, const BlockState& state);
  BlockState initial_state(int64_t batch, const torch::TensorOptions& options) const;
  // Mixer + feed-forward; see Mixer::forward_flops_per_token.
  double forward_flops_per_token(int64_t context) const;

  BlockKind kind() const { return kind_; }
  NormKind norm_kind() const { return norm_kind_; }  // of its norms (a plain layer has none)
  bool has_feed_forward() const { return !ffn_.is_empty(); }
  bool is_plain() const { return plain_; }

 private:
  torch::Tensor add_feed_forward(const torch::Tensor& h);

  BlockKind kind_;
  NormKind norm_kind_;
  int64_t d_model_;
  bool plain_;
  Norm mixer_norm_{nullptr};
  std::shared_ptr<Mixer> mixer_;
  Norm ffn_norm_{nullptr};
  GatedFeedForward ffn_{nullptr};
};
TORCH_MODULE(ResidualBlock);

}  // namespace flashtrain::models

// A pre-norm residual block as xLSTM builds them:
//   h = x + mixer(mixer_norm(x));  y = h + ffn(ffn_norm(h))  (when it has a ffn)
// or, in a plain model (BlockContext::structure kPlain), the bare mixer of an
// lstm, gru or elman layer: y = mixer(x), its h over the heads.
// In training, the mixer's and the feed-forward's outputs are dropped
// (BlockContext::dropout) before they join the stream; a plain layer's output too.
// Each addition is done by the norm after it, in the same pass
// (NormImpl::add_and_norm): between blocks the stream travels with its last
// addition pending (ResidualStream), and the model's final norm does the last.
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

// A residual stream whose last addition is still to be done: the stream so
// far and the sublayer output to add to it (undefined: none).
struct ResidualStream {
  torch::Tensor stream;
  torch::Tensor pending;
  torch::Tensor total() const { return pending.defined() ? stream + pending : stream; }
};

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
  // The same on a stream [B, T, d_model] with an addition pending; the
  // output's pending addition is the feed-forward's (or the mixer's) output.
  // forward(x) is forward_stream({x}).total().
  ResidualStream forward_stream(const ResidualStream& in);
  // x_t [B, d_model] -> y_t [B, d_model] and the state after this token.
  StepOutput forward_step(const torch::Tensor& x_t, const BlockState& state);
  // A chunk x [B, T, d_model] after `state`: what T forward_steps give.
  ChunkOutput forward_chunk(const torch::Tensor& x, const BlockState& state);
  BlockState initial_state(int64_t batch, const torch::TensorOptions& options) const;
  // Mixer + feed-forward; see Mixer::forward_flops_per_token.
  double forward_flops_per_token(int64_t context) const;

  BlockKind kind() const { return kind_; }
  NormKind norm_kind() const { return norm_kind_; }  // of its norms (a plain layer has none)
  bool has_feed_forward() const { return !ffn_.is_empty(); }
  bool is_plain() const { return plain_; }

 private:
  ResidualStream add_feed_forward(const torch::Tensor& x, const torch::Tensor& mixed);
  // A sublayer's output with dropout applied in training.
  torch::Tensor dropped(const torch::Tensor& output);

  BlockKind kind_;
  NormKind norm_kind_;
  int64_t d_model_;
  bool plain_;
  double dropout_;
  Norm mixer_norm_{nullptr};
  std::shared_ptr<Mixer> mixer_;
  Norm ffn_norm_{nullptr};
  GatedFeedForward ffn_{nullptr};
};
TORCH_MODULE(ResidualBlock);

}  // namespace flashtrain::models

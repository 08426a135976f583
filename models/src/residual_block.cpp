#include "flashtrain/models/residual_block.h"

#include <torch/torch.h>

#include <sstream>
#include <string>

#include "flashtrain/models/attention_mixer.h"
#include "flashtrain/models/errors.h"
#include "flashtrain/models/linear_scan_mixer.h"
#include "flashtrain/models/recurrent_mixer.h"
#include "flashtrain/models/slstm_mixer.h"

namespace flashtrain::models {

namespace {

// The norm and feed-forward settings of a kind, from that kind's options.
struct BlockFrame {
  NormKind norm;
  FeedForwardOptions ffn;
};

BlockFrame frame_of(BlockKind kind, const BlockOptions& o) {
  switch (kind) {
    case BlockKind::kLstm:
    case BlockKind::kGru:
    case BlockKind::kElman: return {o.recurrent.norm, o.recurrent.ffn};
    case BlockKind::kSlstm: return {o.slstm.norm, o.slstm.ffn};
    case BlockKind::kLinearScan: return {o.linear_scan.norm, o.linear_scan.ffn};
    case BlockKind::kTransformer: return {o.transformer.norm, o.transformer.ffn};
  }
  throw OptionsError("unknown block kind");
}

std::string block_name(BlockKind kind) { return std::string(to_string(kind)) + " block"; }

std::string shape_of(const torch::Tensor& t) {
  if (!t.defined()) return "an undefined tensor";
  std::ostringstream out;
  out << t.sizes();
  return out.str();
}

}  // namespace

std::shared_ptr<Mixer> make_mixer(BlockKind kind, const BlockContext& context,
                                  const BlockOptions& options) {
  switch (kind) {
    case BlockKind::kLstm:
      return std::make_shared<RecurrentMixer>(flashrnn::Cell::kLstm, context, options.recurrent);
    case BlockKind::kGru:
      return std::make_shared<RecurrentMixer>(flashrnn::Cell::kGru, context, options.recurrent);
    case BlockKind::kElman:
      return std::make_shared<RecurrentMixer>(flashrnn::Cell::kElman, context, options.recurrent);
    case BlockKind::kSlstm: return std::make_shared<SlstmMixer>(context, options.slstm);
    case BlockKind::kLinearScan:
      return std::make_shared<LinearScanMixer>(context, options.linear_scan);
    case BlockKind::kTransformer:
      return std::make_shared<AttentionMixer>(context, options.transformer);
  }
  throw OptionsError("unknown block kind");
}

ResidualBlockImpl::ResidualBlockImpl(BlockKind kind, const BlockContext& context,
                                     const BlockOptions& options)
    : kind_(kind),
      norm_kind_(frame_of(kind, options).norm),
      d_model_(context.d_model),
      plain_(context.structure == Structure::kPlain),
      dropout_(context.dropout) {
  if (context.d_model < 1) {
    throw OptionsError(block_name(kind) + ": d_model must be positive, got " +
                       std::to_string(context.d_model));
  }
  if (plain_) {
    if (!info(kind).plain) {
      throw OptionsError(block_name(kind) + ": the plain structure stacks " + plain_kind_names() +
                         " layers only; use the residual structure for " + std::string(to_string(kind)));
    }
    mixer_ = register_module("mixer", make_mixer(kind, context, options));
    return;
  }
  const FeedForwardOptions ffn = frame_of(kind, options).ffn;
  if (ffn.projection_factor < 0.0) {
    throw OptionsError(block_name(kind) + ": ffn.projection_factor must not be negative (0: no " +
                       "feed-forward), got " + std::to_string(ffn.projection_factor));
  }
  mixer_norm_ = register_module("mixer_norm", Norm(d_model_, norm_kind_, context.norm_eps));
  mixer_ = register_module("mixer", make_mixer(kind, context, options));
  if (ffn.projection_factor > 0.0) {
    ffn_norm_ = register_module("ffn_norm", Norm(d_model_, norm_kind_, context.norm_eps));
    ffn_ = register_module("ffn", GatedFeedForward(context, ffn));
  }
}

// h = x + mixed, and with a feed-forward h + ffn(ffn_norm(h)) with that last
// addition pending (the norm adds x + mixed).
ResidualStream ResidualBlockImpl::add_feed_forward(const torch::Tensor& x, const torch::Tensor& mixed) {
  if (!ffn_) return {x, dropped(mixed)};
  const AddedAndNormed h = ffn_norm_->add_and_norm(x, dropped(mixed));
  return {h.sum, dropped(ffn_(h.normed))};
}

torch::Tensor ResidualBlockImpl::dropped(const torch::Tensor& output) {
  return dropout_ > 0.0 && is_training() ? torch::dropout(output, dropout_, /*train=*/true) : output;
}

torch::Tensor ResidualBlockImpl::forward(const torch::Tensor& x) { return forward_stream({x, {}}).total(); }

ResidualStream ResidualBlockImpl::forward_stream(const ResidualStream& in) {
  const torch::Tensor& x = in.stream;
  if (!x.defined() || x.dim() != 3 || x.size(2) != d_model_ || x.size(1) < 1) {
    throw InputError(block_name(kind_) + ": x must be [batch, time >= 1, " +
                     std::to_string(d_model_) + "], got " + shape_of(x));
  }
  if (plain_) return {dropped(mixer_->forward(in.total())), {}};
  const AddedAndNormed stream = mixer_norm_->add_and_norm(x, in.pending);
  return add_feed_forward(stream.sum, mixer_->forward(stream.normed));
}

StepOutput ResidualBlockImpl::forward_step(const torch::Tensor& x_t, const BlockState& state) {
  if (!x_t.defined() || x_t.dim() != 2 || x_t.size(1) != d_model_) {
    throw InputError(block_name(kind_) + ": x_t must be [batch, " + std::to_string(d_model_) +
                     "] (one token), got " + shape_of(x_t));
  }
  if (plain_) {
    StepOutput out = mixer_->forward_step(x_t, state);
    return {dropped(out.y), std::move(out.state)};
  }
  StepOutput mixed = mixer_->forward_step(mixer_norm_(x_t), state);
  return {add_feed_forward(x_t, mixed.y).total(), std::move(mixed.state)};
}

ChunkOutput ResidualBlockImpl::forward_chunk(const torch::Tensor& x, const BlockState& state) {
  if (!x.defined() || x.dim() != 3 || x.size(2) != d_model_ || x.size(1) < 1) {
    throw InputError(block_name(kind_) + ": x must be [batch, time >= 1, " + std::to_string(d_model_) +
                     "], got " + shape_of(x));
  }
  if (plain_) {
    ChunkOutput out = mixer_->forward_chunk(x, state);
    return {dropped(out.y), std::move(out.state)};
  }
  ChunkOutput mixed = mixer_->forward_chunk(mixer_norm_(x), state);
  return {add_feed_forward(x, mixed.y).total(), std::move(mixed.state)};
}

BlockState ResidualBlockImpl::initial_state(int64_t batch,
                                            const torch::TensorOptions& options) const {
  return mixer_->initial_state(batch, options);
}

double ResidualBlockImpl::forward_flops_per_token(int64_t context) const {
  return mixer_->forward_flops_per_token(context) + (ffn_ ? ffn_->forward_flops_per_token() : 0.0);
}

}  // namespace flashtrain::models

// Plain option structs of every block and the LM. The defaults are the schemes
// README.md states; the trainer fills these from its config.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "flashrnn/flashrnn.h"
#include "flashrnn/scan.h"
#include "flashtrain/models/block_kind.h"
#include "flashtrain/models/model_config.h"
#include "flashtrain/models/option_defaults.h"

namespace flashtrain::models {

// LayerNorm here has a weight and no bias (as xLSTM); RMSNorm as Llama.
enum class NormKind { kLayerNorm, kRmsNorm };

// The gated feed-forward that follows the mixer: down(silu(gate(x)) * up(x)),
// hidden width = projection_factor * d_model rounded up to a multiple of
// `multiple_of`. projection_factor 0: the block has no feed-forward.
struct FeedForwardOptions {
  double projection_factor = defaults::kFfnFactor;
  int64_t multiple_of = defaults::kFfnMultipleOf;
};

// LSTM, GRU and Elman blocks: input projection to the cell's gates, the
// recurrent op, output projection.
struct RecurrentBlockOptions {
  int64_t num_heads = 4;
  int64_t head_dim = 0;  // 0: d_model / num_heads
  // Project each head's slice of the input to that head's gates only
  // (block-diagonal) instead of the whole input to all gates (dense).
  bool block_diagonal_input = false;
  flashrnn::Backend backend = flashrnn::Backend::kAuto;
  bool recompute = false;  // the op keeps no per-step buffers (flashrnn::Options::recompute)
  // The gate that keeps the state (LSTM's forget gate f, GRU's update gate z)
  // starts with biases spaced evenly over [min, max] across each head's units.
  double retain_bias_min = defaults::kRetainBiasMin;
  double retain_bias_max = defaults::kRetainBiasMax;
  // R ~ U(-s/sqrt(D), s/sqrt(D)) with s this scale (1: PyTorch's nn.LSTM); 0: zeros.
  double recurrent_init_scale = defaults::kRecurrentInitScale;
  NormKind norm = NormKind::kLayerNorm;
  FeedForwardOptions ffn;
};

// The xLSTM sLSTM block. Its hidden width is d_model (no output projection).
struct SlstmBlockOptions {
  int64_t num_heads = 4;
  int64_t conv_kernel = defaults::kConvKernel;  // causal depthwise conv + SiLU feeding i and f; 0: none
  flashrnn::Backend backend = flashrnn::Backend::kAuto;
  bool recompute = false;  // the op keeps no per-step buffers (flashrnn::Options::recompute)
  double forget_bias_min = defaults::kSlstmForgetBiasMin;
  double forget_bias_max = defaults::kSlstmForgetBiasMax;
  double recurrent_init_scale = defaults::kSlstmRecurrentInitScale;  // xLSTM starts R at zero
  NormKind norm = NormKind::kLayerNorm;
  FeedForwardOptions ffn;
};

// The linear-scan block: x_t = a_t * x_{t-1} + (1 - a_t) * v_t per channel.
struct LinearScanBlockOptions {
  int64_t hidden_dim = 0;  // channels of the scan; 0: d_model
  flashrnn::ScanBackend backend = flashrnn::ScanBackend::kAuto;
  // a_t starts near 1 - 1/tau with time constants tau (tokens) spaced
  // log-uniformly over [min, max] across the channels; min > 1.
  double min_timescale = defaults::kScanMinTimescale;
  double max_timescale = defaults::kScanMaxTimescale;
  NormKind norm = NormKind::kLayerNorm;
  FeedForwardOptions ffn;
};

// The Llama-style block: causal multi-head attention with rotary positions.
struct TransformerBlockOptions {
  int64_t num_heads = 4;  // head_dim = d_model / num_heads, even (rotary pairs)
  double rope_theta = defaults::kRopeTheta;
  NormKind norm = NormKind::kRmsNorm;
  FeedForwardOptions ffn{8.0 / 3.0, 64};
};

// Options of every kind; a model reads those of the kinds it stacks.
struct BlockOptions {
  RecurrentBlockOptions recurrent;  // lstm, gru, elman
  SlstmBlockOptions slstm;
  LinearScanBlockOptions linear_scan;
  TransformerBlockOptions transformer;
};

// How the layers are built around their mixers.
//   kResidual: pre-norm residual blocks (norm, mixer, residual add, feed-forward)
//              and a final norm before the head, as xLSTM builds them.
//   kPlain:    bare recurrent layers (lstm, gru, elman) whose output is the cell's
//              h over its heads (no output projection), stacked without norms,
//              residual adds or feed-forwards, and a head straight on the last h:
//              the "LSTM" baseline of the formal-language papers.
enum class Structure { kResidual, kPlain };

inline const char* to_string(Structure structure) {
  return structure == Structure::kPlain ? "plain" : "residual";
}

// What a block needs to know about the model around it: its width, the depth
// that scales the init of output projections (xLSTM's wang init), the epsilon
// of every norm, whether it is a residual block or a plain layer, and the
// dropout on its sublayers' outputs in training.
struct BlockContext {
  int64_t d_model = 0;
  int64_t num_blocks = 1;
  double norm_eps = defaults::kNormEps;
  Structure structure = Structure::kResidual;
  double dropout = 0.0;
};

// The LM: a [model] section (model_config.h: the layers' kinds and structure,
// the width, heads, feed-forward, initialisation, the op's backend, recompute,
// wavefront; a library user fills it as a config file does), the vocabulary
// resolved, and the one choice no config key makes.
struct LanguageModelOptions {
  ModelConfig model;
  int64_t vocab_size = 0;              // model.vocab_size may be 0 (the tokenizer's); this is the size
  std::optional<NormKind> final_norm;  // unset: the norm kind of the last block; kPlain: none
};

// model.kind and model.n_layers for this stack of kinds, bottom to top.
void set_layer_kinds(ModelConfig& model, const std::vector<BlockKind>& kinds);
// The block kind of each layer, bottom to top (an OptionsError for an unknown
// name or a kind list that is neither one entry nor one per layer).
std::vector<BlockKind> layer_kinds(const ModelConfig& model);
// model.structure as the enum (an OptionsError for another name).
Structure structure_of(const ModelConfig& model);
// The options of every block kind that a section gives: its shared keys
// (heads, head width, feed-forward, backend, initialisation) in each kind's
// terms; the rest stay the kinds' defaults.
BlockOptions block_options(const ModelConfig& model);

}  // namespace flashtrain::models

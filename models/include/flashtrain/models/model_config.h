// The [model] section of a run's configuration, owned by the models it
// describes: each key's type and default (the members) and its row of the
// config schema (describe(): the doc string, the check of its value, the
// aliases a user may type for it), in one place. trainer/config reads the
// rows into its schema and relates keys across sections (consistency.cpp);
// LanguageModelOptions holds one (options.h), whose block_options() turns
// its shared keys into each block kind's options.
// Torch-free: the config library includes it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "flashtrain/models/block_kind.h"
#include "flashtrain/models/option_defaults.h"

namespace flashtrain::models {

struct ModelConfig {
  std::vector<std::string> kind = {"lstm"};  // one entry: every layer; else one per layer
  std::string structure = "residual";
  std::int64_t dim = 768;
  std::int64_t n_layers = 12;
  std::int64_t n_heads = 12;
  std::int64_t head_dim = 0;  // 0: dim / n_heads
  double ffn_factor = defaults::kFfnFactor;
  std::int64_t ffn_multiple_of = defaults::kFfnMultipleOf;
  std::int64_t vocab_size = 0;  // 0: from the tokenizer, or the task's vocabulary
  bool tie_embeddings = true;
  std::string backend = "auto";
  std::int64_t recompute_layers = 0;
  std::int64_t wavefront_chunks = 0;
  double dropout = 0.0;
  double norm_eps = defaults::kNormEps;
  std::int64_t conv_kernel = defaults::kConvKernel;
  double rope_theta = defaults::kRopeTheta;
  double retain_bias_min = defaults::kRetainBiasMin;
  double retain_bias_max = defaults::kRetainBiasMax;
  double recurrent_init_scale = defaults::kRecurrentInitScale;

  // head_dim, or dim / n_heads when head_dim is 0.
  std::int64_t resolved_head_dim() const { return head_dim > 0 ? head_dim : dim / n_heads; }
  // The block kind of layer `layer` (0-based, < n_layers).
  const std::string& layer_kind(std::int64_t layer) const {
    return kind.size() == 1 ? kind.front() : kind.at(static_cast<std::size_t>(layer));
  }

  // The schema's row of every key, in the members' order: for each,
  // rows.key(name, member, doc, check, aliases), and not_shaping_parameters()
  // after a key that does not decide what the parameters are (their names and
  // shapes: how the op runs, how parameters start), which may differ when a
  // run resumes. C is the config's Constraint.
  template <class C, class Rows>
  static void describe(Rows& rows);
};

// The names of the block kinds, as config values.
inline std::vector<std::string> block_kind_names() {
  std::vector<std::string> names;
  for (const BlockKindInfo& row : kBlockKinds) names.emplace_back(row.name);
  return names;
}

template <class C, class Rows>
void ModelConfig::describe(Rows& rows) {
  rows.key("kind", &ModelConfig::kind, "block kind of every layer, or a list with one kind per layer",
           C::one_of(block_kind_names()), {"block", "blocks", "type", "arch", "architecture"})
      .key("structure", &ModelConfig::structure,
           "residual: pre-norm residual blocks (norm, mixer, residual add, feed-forward) and a "
           "final norm; plain: bare lstm / gru / elman layers, each passing its h over the heads "
           "(n_heads x head_dim = dim) to the next, and the head on the last h, without norms, "
           "residual adds, feed-forwards or output projections",
           C::one_of({"residual", "plain"}), {"layer_structure"})
      .key("dim", &ModelConfig::dim, "model (embedding) width", C::int_range(1, 1 << 16),
           {"d_model", "hidden_size", "n_embd", "embedding_dim", "width", "embed_dim"})
      .key("n_layers", &ModelConfig::n_layers, "number of blocks", C::int_range(1, 1024),
           {"num_layers", "n_layer", "depth", "layers", "num_blocks", "n_blocks"})
      .key("n_heads", &ModelConfig::n_heads, "heads of each block's recurrent or attention mixer",
           C::int_range(1, 4096), {"num_heads", "n_head", "heads"})
      .key("head_dim", &ModelConfig::head_dim,
           "width of one head; 0 = dim / n_heads (RNN blocks need n_heads x head_dim = dim)",
           C::int_range(0, 1 << 16), {"head_size", "d_head"})
      .key("ffn_factor", &ModelConfig::ffn_factor,
           "gated feed-forward width as a multiple of dim; 0 = no feed-forward",
           C::float_range(0, false, 16, false), {"ffn_dim_multiplier", "mlp_ratio", "proj_factor"})
      .key("ffn_multiple_of", &ModelConfig::ffn_multiple_of,
           "round the feed-forward width up to a multiple of this", C::int_range(1, 4096), {"multiple_of"})
      .key("vocab_size", &ModelConfig::vocab_size, "vocabulary size; 0 = the tokenizer's (or the task's) vocabulary",
           C::int_range(0, std::int64_t{1} << 31), {"vocab", "n_vocab", "num_tokens"})
      .key("tie_embeddings", &ModelConfig::tie_embeddings,
           "share the weights of the input embedding and the output head", C::none(),
           {"tie_word_embeddings", "weight_tying", "tied_embeddings"})
      .key("backend", &ModelConfig::backend, "recurrent op backend; auto picks the fastest one that supports the case",
           C::one_of({"vanilla", "alternating", "fused", "auto"}), {"implementation", "kernel"})
      .not_shaping_parameters()
      .key("recompute_layers", &ModelConfig::recompute_layers,
           "lstm / gru / elman / slstm blocks: in this many blocks, counted from the embedding, "
           "the recurrent op keeps only its inputs for the backward, which runs its forward "
           "again (less activation memory, one more forward each); n_layers or more = all",
           C::int_range(0, 1 << 16),
           {"recompute", "recompute_states", "activation_checkpointing", "gradient_checkpointing"})
      .not_shaping_parameters()
      .key("wavefront_chunks", &ModelConfig::wavefront_chunks,
           "run the blocks as a wavefront over this many chunks of each sequence: block l on "
           "chunk k beside block l-1 on chunk k+1, a CUDA stream per block (the same results; "
           "fills more of the GPU where few sequences are in flight; one rank only); 0 or 1 = block after block",
           C::int_range(0, 1 << 16), {"wavefront", "pipeline_chunks", "time_chunks"})
      .not_shaping_parameters()
      .key("dropout", &ModelConfig::dropout,
           "in training, the probability of dropping each output of a block's mixer and feed-forward "
           "(of each layer, plain) before it joins the residual stream",
           C::float_range(0, false, 1, true), {"dropout_rate", "p_dropout", "resid_pdrop"})
      .not_shaping_parameters()
      .key("norm_eps", &ModelConfig::norm_eps, "epsilon of the normalisation layers",
           C::float_range(0, true, 1, true), {"eps", "layer_norm_eps", "rms_norm_eps"})
      .key("conv_kernel", &ModelConfig::conv_kernel,
           "sLSTM blocks: width of the causal convolution feeding the i and f gates; 0 = none",
           C::int_range(0, 16), {"conv1d_kernel_size", "conv_size"})
      .key("rope_theta", &ModelConfig::rope_theta, "Transformer blocks: rotary position base", C::positive(),
           {"rope_base", "theta"})
      .key("retain_bias_min", &ModelConfig::retain_bias_min,
           "lstm / gru blocks: the lowest initial bias of the gate that keeps the state "
           "(LSTM forget, GRU update), spaced up to retain_bias_max across each head's units",
           C::float_range(-100, false, 100, false), {"forget_bias_min"})
      .not_shaping_parameters()
      .key("retain_bias_max", &ModelConfig::retain_bias_max,
           "lstm / gru blocks: the highest initial bias of the gate that keeps the state",
           C::float_range(-100, false, 100, false), {"forget_bias_max"})
      .not_shaping_parameters()
      .key("recurrent_init_scale", &ModelConfig::recurrent_init_scale,
           "lstm / gru / elman blocks: R starts uniform in +-scale / sqrt(head_dim); 0 = zeros",
           C::non_negative(), {"r_init_scale"})
      .not_shaping_parameters();
}

}  // namespace flashtrain::models

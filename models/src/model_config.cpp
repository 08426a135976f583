// A [model] section into the LM's options: which block each layer is, and
// the options of every block kind from the section's shared keys.
#include "flashtrain/models/options.h"

namespace flashtrain::models {

LanguageModelOptions language_model_options(const ModelConfig& m, int64_t vocab_size) {
  LanguageModelOptions o;
  o.vocab_size = vocab_size;
  o.d_model = m.dim;
  for (int64_t layer = 0; layer < m.n_layers; ++layer) o.blocks.push_back(parse_block_kind(m.layer_kind(layer)));
  // The schema admits only these two; the config's consistency checks the kinds of a plain model.
  o.structure = m.structure == "plain" ? Structure::kPlain : Structure::kResidual;
  o.tie_embeddings = m.tie_embeddings;
  o.norm_eps = m.norm_eps;
  o.dropout = m.dropout;
  o.recompute_layers = m.recompute_layers;
  o.wavefront_chunks = m.wavefront_chunks;

  const FeedForwardOptions ffn{m.ffn_factor, m.ffn_multiple_of};
  const flashrnn::Backend backend = flashrnn::parse_backend(m.backend);
  BlockOptions& b = o.block;
  b.recurrent.num_heads = m.n_heads;
  b.recurrent.head_dim = m.head_dim;
  b.recurrent.backend = backend;
  b.recurrent.ffn = ffn;
  b.recurrent.retain_bias_min = m.retain_bias_min;
  b.recurrent.retain_bias_max = m.retain_bias_max;
  b.recurrent.recurrent_init_scale = m.recurrent_init_scale;
  b.slstm.num_heads = m.n_heads;
  b.slstm.conv_kernel = m.conv_kernel;
  b.slstm.backend = backend;
  b.slstm.ffn = ffn;
  b.linear_scan.ffn = ffn;
  b.transformer.num_heads = m.n_heads;
  b.transformer.rope_theta = m.rope_theta;
  b.transformer.ffn = ffn;
  return o;
}

}  // namespace flashtrain::models

// A [model] section in the blocks' terms: which kind each layer is, the
// structure, and the options of every block kind from the section's shared keys.
#include <string>

#include "flashtrain/models/errors.h"
#include "flashtrain/models/options.h"

namespace flashtrain::models {

void set_layer_kinds(ModelConfig& model, const std::vector<BlockKind>& kinds) {
  model.kind.clear();
  for (BlockKind kind : kinds) model.kind.emplace_back(to_string(kind));
  model.n_layers = int64_t(kinds.size());
}

std::vector<BlockKind> layer_kinds(const ModelConfig& model) {
  if (model.n_layers < 1)
    throw OptionsError("model: n_layers must be positive, got " + std::to_string(model.n_layers));
  if (model.kind.size() != 1 && int64_t(model.kind.size()) != model.n_layers)
    throw OptionsError("model: kind lists " + std::to_string(model.kind.size()) + " kinds for " +
                       std::to_string(model.n_layers) + " layers; give one kind (every layer) or one per layer");
  std::vector<BlockKind> kinds;
  for (int64_t layer = 0; layer < model.n_layers; ++layer) kinds.push_back(parse_block_kind(model.layer_kind(layer)));
  return kinds;
}

Structure structure_of(const ModelConfig& model) {
  if (model.structure == to_string(Structure::kResidual)) return Structure::kResidual;
  if (model.structure == to_string(Structure::kPlain)) return Structure::kPlain;
  throw OptionsError("model: structure must be residual or plain, got '" + model.structure + "'");
}

BlockOptions block_options(const ModelConfig& m) {
  const FeedForwardOptions ffn{m.ffn_factor, m.ffn_multiple_of};
  flashrnn::Backend backend;
  try {
    backend = flashrnn::parse_backend(m.backend);
  } catch (const std::invalid_argument& e) {
    throw OptionsError(std::string("model: ") + e.what());
  }
  BlockOptions b;
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
  return b;
}

}  // namespace flashtrain::models

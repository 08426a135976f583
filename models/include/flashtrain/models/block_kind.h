// The kinds of residual block a model stacks, and their names in configs.
#pragma once

#include <string_view>

namespace flashtrain::models {

enum class BlockKind { kLstm, kGru, kElman, kSlstm, kLinearScan, kTransformer };

// "lstm", "gru", "elman", "slstm", "linear_scan", "transformer".
std::string_view to_string(BlockKind kind);
// The inverse of to_string; throws OptionsError listing the choices.
BlockKind parse_block_kind(std::string_view name);

}  // namespace flashtrain::models

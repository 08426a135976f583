#include "flashtrain/models/block_kind.h"

#include <string>

#include "flashtrain/models/errors.h"

namespace flashtrain::models {

namespace {
constexpr BlockKind kAllKinds[] = {BlockKind::kLstm,       BlockKind::kGru,
                                   BlockKind::kElman,      BlockKind::kSlstm,
                                   BlockKind::kLinearScan, BlockKind::kTransformer};
}  // namespace

std::string_view to_string(BlockKind kind) {
  switch (kind) {
    case BlockKind::kLstm: return "lstm";
    case BlockKind::kGru: return "gru";
    case BlockKind::kElman: return "elman";
    case BlockKind::kSlstm: return "slstm";
    case BlockKind::kLinearScan: return "linear_scan";
    case BlockKind::kTransformer: return "transformer";
  }
  return "?";
}

BlockKind parse_block_kind(std::string_view name) {
  std::string choices;
  for (BlockKind kind : kAllKinds) {
    if (to_string(kind) == name) return kind;
    choices += (choices.empty() ? "" : ", ") + std::string(to_string(kind));
  }
  throw OptionsError("unknown block kind '" + std::string(name) + "'; choose one of " + choices);
}

}  // namespace flashtrain::models

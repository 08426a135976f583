// The kinds of block a model stacks, listed once. Everything that names or
// asks about a block kind reads kBlockKinds: the config's choices and checks
// (trainer/config, torch-free, includes this header), the model's factory,
// the tune report, and the Python package (through the extension's
// block_kinds()). A new kind is a row here and its mixer in residual_block.cpp.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace flashtrain::models {

enum class BlockKind { kLstm, kGru, kElman, kSlstm, kLinearScan, kTransformer };

struct BlockKindInfo {
  BlockKind kind;
  std::string_view name;  // in configs, exports and logs
  std::string_view cell;  // the recurrent op's cell it runs; empty: not recurrent
  bool heads;             // model.n_heads splits it (the recurrent ones: n_heads x head_dim = dim)
  bool plain;             // a plain model (model.structure = plain) stacks it as a bare layer
};

inline constexpr std::array<BlockKindInfo, 6> kBlockKinds{{
    {BlockKind::kLstm, "lstm", "lstm", true, true},
    {BlockKind::kGru, "gru", "gru", true, true},
    {BlockKind::kElman, "elman", "elman", true, true},
    {BlockKind::kSlstm, "slstm", "slstm", true, false},
    {BlockKind::kLinearScan, "linear_scan", "", false, false},
    {BlockKind::kTransformer, "transformer", "", true, false},
}};

constexpr bool rows_follow_the_enum() {
  for (std::size_t i = 0; i < kBlockKinds.size(); ++i)
    if (static_cast<std::size_t>(kBlockKinds[i].kind) != i) return false;
  return true;
}
static_assert(rows_follow_the_enum(), "kBlockKinds: one row per BlockKind, in the enum's order");

constexpr const BlockKindInfo& info(BlockKind kind) { return kBlockKinds[static_cast<std::size_t>(kind)]; }

constexpr std::string_view to_string(BlockKind kind) { return info(kind).name; }

// The row named `name`, or nullptr.
constexpr const BlockKindInfo* find_block_kind(std::string_view name) {
  for (const BlockKindInfo& row : kBlockKinds)
    if (row.name == name) return &row;
  return nullptr;
}

// "lstm, gru and elman": the kinds a plain model stacks, for messages.
inline std::string plain_kind_names() {
  std::string names, last;
  for (const BlockKindInfo& row : kBlockKinds) {
    if (!row.plain) continue;
    if (!last.empty()) names += (names.empty() ? "" : ", ") + last;
    last = row.name;
  }
  return names.empty() ? last : names + " and " + last;
}

// The kind named `name`; throws OptionsError listing the choices.
BlockKind parse_block_kind(std::string_view name);

}  // namespace flashtrain::models

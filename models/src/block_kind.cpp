#include "flashtrain/models/block_kind.h"

#include <string>

#include "flashtrain/models/errors.h"

namespace flashtrain::models {

BlockKind parse_block_kind(std::string_view name) {
  if (const BlockKindInfo* row = find_block_kind(name)) return row->kind;
  std::string choices;
  for (const BlockKindInfo& row : kBlockKinds) choices += (choices.empty() ? "" : ", ") + std::string(row.name);
  throw OptionsError("unknown block kind '" + std::string(name) + "'; choose one of " + choices);
}

}  // namespace flashtrain::models

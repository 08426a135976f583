#include "flashtrain/config/resolved_config.h"

#include <utility>

namespace flashtrain::config {

void ResolvedConfig::set(const KeySpec& key, const Value& value, SourceLocation where) {
  key.set(config, value);
  origins_[key.dotted_name()] = Origin{std::move(where), next_sequence_++};
}

const SourceLocation* ResolvedConfig::origin(std::string_view dotted_key) const {
  const auto it = origins_.find(dotted_key);
  return it == origins_.end() ? nullptr : &it->second.where;
}

ConfigError ResolvedConfig::error_at(std::initializer_list<std::string_view> dotted_keys,
                                     std::string message) const {
  const Origin* latest = nullptr;
  for (const std::string_view key : dotted_keys) {
    const auto it = origins_.find(key);
    if (it != origins_.end() && (!latest || it->second.sequence > latest->sequence))
      latest = &it->second;
  }
  if (!latest) return ConfigError("", 0, 0, std::move(message));
  return ConfigError(latest->where.file, latest->where.line, latest->where.column,
                     std::move(message));
}

}  // namespace flashtrain::config

#include "flashtrain/config/config.h"

#include "flashtrain/config/schema.h"

namespace flashtrain::config {

std::int64_t ModelConfig::resolved_head_dim() const {
  return head_dim > 0 ? head_dim : dim / n_heads;
}

const std::string& ModelConfig::layer_kind(std::int64_t layer) const {
  return kind.size() == 1 ? kind.front() : kind.at(static_cast<std::size_t>(layer));
}

bool operator==(const Config& a, const Config& b) {
  for (const KeySpec& key : schema().keys())
    if (key.get(a) != key.get(b)) return false;
  return true;
}

}  // namespace flashtrain::config

// Reads TOML text into a ResolvedConfig (the only part that includes TOML++).
#pragma once

#include <string>
#include <string_view>

#include "flashtrain/config/resolved_config.h"

namespace flashtrain::config {

// Parses `text` and sets every key it names, in file order, recording each
// value's position. Throws ConfigError for malformed TOML (TOML++'s message
// and position), unknown sections and keys, wrong types and values that break
// a key's constraint; `file` names the text in those errors.
void read_toml(std::string_view text, const std::string& file, ResolvedConfig& into);

}  // namespace flashtrain::config

// Loading a config: TOML file (or text) -> command-line overrides -> checks.
//
//   std::vector<std::string> flags = {"--training.steps=100"};
//   ResolvedConfig resolved = load_config("configs/quickstart.toml", flags);
//
// Every function throws ConfigError (config_error.h) for the first problem:
// malformed TOML, unknown sections or keys, wrong types, values out of range,
// bad flags, and broken relations between keys (consistency.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "flashtrain/config/resolved_config.h"

namespace flashtrain::config {

// Reads the TOML file at `path` over the defaults, applies the override flags
// (overrides.h) in order, then checks consistency.
ResolvedConfig load_config(const std::string& path,
                           const std::vector<std::string>& override_flags = {});

// The same for TOML text; `file` names it in messages.
ResolvedConfig load_config_text(std::string_view toml, const std::string& file,
                                const std::vector<std::string>& override_flags = {});

// The defaults with the override flags applied, for runs without a file.
ResolvedConfig resolve_defaults(const std::vector<std::string>& override_flags = {});

}  // namespace flashtrain::config

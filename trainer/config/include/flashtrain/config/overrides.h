// Command-line overrides: --section.key=value, applied after the config file.
//
// Values are typed by the key: booleans true/false (a bare --debug.deterministic
// means true), integers in decimal, floats as 3e-4, .5 or 1, strings as written
// (no quotes needed), string lists comma-separated (--model.kind=lstm,transformer).
// Errors are ConfigErrors whose file() is the flag, and they use the same
// checks and messages as the TOML loader.
#pragma once

#include <string_view>

#include "flashtrain/config/resolved_config.h"

namespace flashtrain::config {

// Whether `arg` has the shape of an override: "--" and a dotted name before
// any '='. "--config" and "--print-config" are not overrides.
bool is_override_flag(std::string_view arg);

// Parses `flag`, checks its value and sets it in `resolved` (no cross-key
// checks; load_config runs those after the last flag).
void apply_override(std::string_view flag, ResolvedConfig& resolved);

}  // namespace flashtrain::config

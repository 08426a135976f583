// The config as JSON (nlohmann::json) for checkpoints and exports:
// {"job": {"name": ...}, "model": {"kind": ["lstm"], ...}, ...} with every
// key of the schema; string lists are always arrays.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "flashtrain/config/config.h"

namespace flashtrain::config {

nlohmann::json to_json(const Config& config);

// Reads what to_json wrote (e.g. from a checkpoint), with the same key, type,
// range and consistency checks as the TOML loader; keys it lacks keep their
// defaults.
// Throws ConfigError with `file` as the location (no line: JSON positions
// are not tracked).
Config config_from_json(const nlohmann::json& json, const std::string& file);

}  // namespace flashtrain::config

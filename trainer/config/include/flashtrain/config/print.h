// The resolved config as text: print-config and the config hash.
#pragma once

#include <string>

#include "flashtrain/config/config.h"

namespace flashtrain::config {

// Every section and key as TOML, each key preceded by its doc string and
// constraint as a comment, so it can be copied into a config file; reading
// it back gives the same Config (and hash). Starts with the hash.
std::string to_toml(const Config& config);

// A hash of every key's value: 16 lowercase hex digits of FNV-1a (64 bit)
// over "section.key=<TOML literal>\n" in schema order. It depends only on the
// values and the schema's key names, not on the platform, the process or how
// the values were given, so ranks can compare it to prove they agree.
// Adding a key to the schema changes every hash.
std::string config_hash(const Config& config);

}  // namespace flashtrain::config

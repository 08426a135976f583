// A config value of any key type, and how values are written in messages and
// in TOML.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace flashtrain::config {

enum class ValueType { kBool, kInt, kFloat, kString, kStringList };

// Holds the alternative of its key's ValueType, in the same order (an integer
// key with a keyword, KeySpec::keyword, holds that word as a string for it).
using Value = std::variant<bool, std::int64_t, double, std::string, std::vector<std::string>>;

// "a boolean", "an integer", "a float", "a string", "a string or an array of strings".
const char* type_description(ValueType type);

// For messages: 3, 0.0003, 1, 'fused', ['lstm', 'gru'] (floats as in
// to_toml_literal, without the '.0' of whole numbers).
std::string format_value(const Value& value);

// As TOML: 3, 0.0003, 1.0, 1e-08, "fused", ["lstm", "gru"]. Floats have the
// fewest digits that read back to the same double (plain notation for
// exponents -5..15, scientific beyond); a one-element list is written as its
// string (the schema reads both the same way).
std::string to_toml_literal(const Value& value);

// A TOML basic string: "..." with \\, \" and control characters escaped.
std::string quote_toml_string(const std::string& text);

}  // namespace flashtrain::config

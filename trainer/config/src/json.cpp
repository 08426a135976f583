#include "flashtrain/config/json.h"

#include <cstdint>
#include <optional>

#include "flashtrain/config/consistency.h"
#include "flashtrain/config/resolved_config.h"
#include "flashtrain/config/schema.h"
#include "unknown_names.h"

namespace flashtrain::config {
namespace {

nlohmann::json value_to_json(const Value& value) {
  return std::visit([](const auto& v) { return nlohmann::json(v); }, value);
}

// The JSON value as a Value of the key's type, or nothing for a wrong type.
std::optional<Value> json_to_value(const KeySpec& key, const nlohmann::json& json) {
  switch (key.type) {
    case ValueType::kBool:
      if (json.is_boolean()) return json.get<bool>();
      break;
    case ValueType::kInt:
      if (json.is_number_unsigned() && json.get<std::uint64_t>() > INT64_MAX) break;
      if (json.is_number_integer()) return json.get<std::int64_t>();
      if (json.is_string() && !key.keyword.empty() && json.get<std::string>() == key.keyword)
        return json.get<std::string>();
      break;
    case ValueType::kFloat:
      if (json.is_number()) return json.get<double>();
      break;
    case ValueType::kString:
      if (json.is_string()) return json.get<std::string>();
      break;
    case ValueType::kStringList:
      if (json.is_string()) return std::vector<std::string>{json.get<std::string>()};
      if (!json.is_array()) break;
      for (const nlohmann::json& item : json)
        if (!item.is_string()) return std::nullopt;
      return json.get<std::vector<std::string>>();
  }
  return std::nullopt;
}

}  // namespace

nlohmann::json to_json(const Config& config) {
  nlohmann::json json = nlohmann::json::object();
  for (const SectionSpec& section : schema().sections()) {
    nlohmann::json& keys = json[std::string(section.name)] = nlohmann::json::object();
    for (const KeySpec* key : schema().keys_of(section.name))
      keys[std::string(key->name)] = value_to_json(key->get(config));
  }
  return json;
}

Config config_from_json(const nlohmann::json& json, const std::string& file) {
  const auto fail = [&file](std::string message) { return ConfigError(file, 0, 0, std::move(message)); };
  if (!json.is_object()) throw fail("the config must be a JSON object of sections");
  ResolvedConfig resolved;
  for (const auto& [section, keys] : json.items()) {
    if (!schema().find_section(section)) throw fail(unknown_section_message(section));
    if (!keys.is_object()) throw fail("section [" + section + "] must be a JSON object");
    for (const auto& [name, json_value] : keys.items()) {
      const KeySpec* key = schema().find_key(section, name);
      if (!key) throw fail(unknown_key_message(section, name));
      const std::optional<Value> value = json_to_value(*key, json_value);
      if (!value)
        throw fail(key->subject() + " must be " + key->type_text() + "; got " +
                   json_value.dump());
      if (const auto problem = check_value(*key, *value)) throw fail(problem->message);
      resolved.set(*key, *value, SourceLocation{file, 0, 0});
    }
  }
  check_consistency(resolved);
  return resolved.config;
}

}  // namespace flashtrain::config

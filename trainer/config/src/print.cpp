#include "flashtrain/config/print.h"

#include <cstdint>
#include <cstdio>

#include "flashtrain/config/schema.h"

namespace flashtrain::config {

std::string to_toml(const Config& config) {
  std::string text =
      "# flashtrain config, resolved (file, then command-line overrides, then defaults).\n"
      "# Each key's comment is its doc string and its allowed values.\n"
      "# config hash: " + config_hash(config) + "\n";
  for (const SectionSpec& section : schema().sections()) {
    text += "\n# " + std::string(section.doc) + "\n[" + std::string(section.name) + "]\n";
    for (const KeySpec* key : schema().keys_of(section.name)) {
      text += "# " + std::string(key->doc);
      if (const std::string allowed = key->allowed(); !allowed.empty())
        text += " (" + allowed + ")";
      text += "\n" + std::string(key->name) + " = " + to_toml_literal(key->get(config)) + "\n";
    }
  }
  return text;
}

std::string config_hash(const Config& config) {
  std::uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a offset basis
  const auto feed = [&hash](const std::string& bytes) {
    for (const char c : bytes) {
      hash ^= static_cast<unsigned char>(c);
      hash *= 0x100000001b3ull;  // FNV-1a prime
    }
  };
  for (const KeySpec& key : schema().keys())
    feed(key.dotted_name() + "=" + to_toml_literal(key.get(config)) + "\n");
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return hex;
}

}  // namespace flashtrain::config

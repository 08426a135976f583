#include "unknown_names.h"

#include <vector>

#include "flashtrain/config/schema.h"
#include "suggest.h"

namespace flashtrain::config {
namespace {

// Sections whose keys include exactly `key`, as "[data]" or "[training], [validation]".
std::string sections_with_key(std::string_view key) {
  std::string found;
  for (const SectionSpec& section : schema().sections())
    if (schema().find_key(section.name, key))
      found += (found.empty() ? "[" : ", [") + std::string(section.name) + "]";
  return found;
}

std::string section_list() {
  std::string list;
  for (const SectionSpec& section : schema().sections())
    list += (list.empty() ? "[" : ", [") + std::string(section.name) + "]";
  return list;
}

}  // namespace

std::string unknown_section_message(std::string_view section) {
  std::vector<Candidate> candidates;
  for (const SectionSpec& known : schema().sections()) candidates.push_back({known.name, known.name});
  std::string message = "unknown section [" + std::string(section) + "]";
  if (const auto guess = closest_match(section, candidates)) return message + "; did you mean [" + *guess + "]?";
  return message + "; the sections are " + section_list();
}

std::string unknown_key_message(std::string_view section, std::string_view key) {
  const std::vector<const KeySpec*> keys = schema().keys_of(section);
  std::vector<Candidate> candidates;
  for (const KeySpec* known : keys) candidates.push_back({known->name, known->name});
  for (const KeySpec* known : keys)
    for (const std::string_view alias : known->aliases) candidates.push_back({alias, known->name});

  std::string message = "unknown key '" + std::string(key) + "' in [" + std::string(section) + "]";
  if (const auto guess = closest_match(key, candidates)) return message + "; did you mean '" + *guess + "'?";
  if (const std::string elsewhere = sections_with_key(key); !elsewhere.empty())
    return message + "; '" + std::string(key) + "' is a key of " + elsewhere;
  std::string names;
  for (const KeySpec* known : keys) names += (names.empty() ? "" : ", ") + std::string(known->name);
  return message + "; the keys of [" + std::string(section) + "] are " + names;
}

std::string key_outside_sections_message(std::string_view key) {
  std::string message = "key '" + std::string(key) + "' is outside any section";
  if (const std::string sections = sections_with_key(key); !sections.empty())
    return message + "; '" + std::string(key) + "' is a key of " + sections;
  return message + "; keys go under a section header: " + section_list();
}

}  // namespace flashtrain::config

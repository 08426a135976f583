// A config together with where each explicitly set key got its value, so that
// checks made after loading (cross-key checks, missing files, the world size)
// can point at the offending key's file:line:column or flag.
#pragma once

#include <initializer_list>
#include <map>
#include <string>
#include <string_view>

#include "flashtrain/config/config.h"
#include "flashtrain/config/config_error.h"
#include "flashtrain/config/schema.h"
#include "flashtrain/config/value.h"

namespace flashtrain::config {

// Where a value was set: a file position, or a flag (file = the flag, line 0).
struct SourceLocation {
  std::string file;
  int line = 0;
  int column = 0;
};

struct ResolvedConfig {
  Config config;

  // Sets `key` to `value` (of the key's type, already checked) and records
  // where it came from. Later calls win, as later flags override the file.
  void set(const KeySpec& key, const Value& value, SourceLocation where);

  // Where the key "section.key" was set; nullptr while it has its default.
  const SourceLocation* origin(std::string_view dotted_key) const;

  // An error about a relation between keys, located at whichever of
  // `dotted_keys` was set last (a flag after the file, a later line after an
  // earlier one): that is the change that broke the relation. No location
  // when all of them have their defaults.
  ConfigError error_at(std::initializer_list<std::string_view> dotted_keys,
                       std::string message) const;

 private:
  struct Origin {
    SourceLocation where;
    int sequence;  // order of the set() calls
  };
  std::map<std::string, Origin, std::less<>> origins_;
  int next_sequence_ = 0;
};

}  // namespace flashtrain::config

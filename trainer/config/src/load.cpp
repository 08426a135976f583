#include "flashtrain/config/load.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "flashtrain/config/consistency.h"
#include "flashtrain/config/overrides.h"
#include "toml_reader.h"

namespace flashtrain::config {
namespace {

std::string read_file(const std::string& path) {
  std::error_code ignored;
  if (std::filesystem::is_directory(path, ignored))
    throw ConfigError(path, 0, 0, "is a directory, not a config file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path, 0, 0, std::string("cannot open the config file: ") + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ConfigError(path, 0, 0, std::string("cannot read the config file: ") + std::strerror(errno));
  return text.str();
}

ResolvedConfig finish(ResolvedConfig resolved, const std::vector<std::string>& override_flags) {
  for (const std::string& flag : override_flags) apply_override(flag, resolved);
  check_consistency(resolved);
  return resolved;
}

}  // namespace

ResolvedConfig load_config(const std::string& path, const std::vector<std::string>& override_flags) {
  return load_config_text(read_file(path), path, override_flags);
}

ResolvedConfig load_config_text(std::string_view toml, const std::string& file,
                                const std::vector<std::string>& override_flags) {
  ResolvedConfig resolved;
  read_toml(toml, file, resolved);
  return finish(std::move(resolved), override_flags);
}

ResolvedConfig resolve_defaults(const std::vector<std::string>& override_flags) {
  return finish(ResolvedConfig{}, override_flags);
}

}  // namespace flashtrain::config

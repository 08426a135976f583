#include "flashtrain/config/config_error.h"

#include <utility>

namespace flashtrain::config {
namespace {

// "file:line:column: error: message", leaving out what is unknown.
std::string diagnostic(const std::string& file, int line, int column, const std::string& message) {
  std::string text;
  if (!file.empty()) {
    text = file;
    if (line > 0) text += ":" + std::to_string(line) + ":" + std::to_string(column);
    text += ": ";
  }
  return text + "error: " + message;
}

}  // namespace

ConfigError::ConfigError(std::string file, int line, int column, std::string message)
    : std::runtime_error(diagnostic(file, line, column, message)),
      file_(std::move(file)),
      line_(line),
      column_(column),
      message_(std::move(message)) {}

}  // namespace flashtrain::config

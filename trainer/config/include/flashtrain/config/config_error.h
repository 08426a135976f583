// The one error type of the config library.
//
// what() reads like a compiler diagnostic:
//   configs/x.toml:12:5: error: unknown key 'lerning_rate' in [optimizer]; did you mean 'lr'?
//   --optimizer.lr=abc: error: 'lr' in [optimizer] must be a float; got 'abc'
//   configs/x.toml: error: cannot open the config file: No such file or directory
// `file` is the config file's path as the user gave it, or, for a value that
// came from the command line, the flag itself; line and column are 1-based
// (0 when there is no position, e.g. for flags and unreadable files).
//
// Exit-code contract (the caller's job): a program that gets a ConfigError
// prints what() to stderr and exits with status 2 (a usage error), without a
// stack trace; status 1 stays for failures during the run.
#pragma once

#include <stdexcept>
#include <string>

namespace flashtrain::config {

inline constexpr int kConfigErrorExitCode = 2;

class ConfigError : public std::runtime_error {
 public:
  ConfigError(std::string file, int line, int column, std::string message);

  const std::string& file() const { return file_; }
  int line() const { return line_; }
  int column() const { return column_; }
  // The message alone, without the location prefix.
  const std::string& message() const { return message_; }

 private:
  std::string file_;
  int line_;
  int column_;
  std::string message_;
};

}  // namespace flashtrain::config

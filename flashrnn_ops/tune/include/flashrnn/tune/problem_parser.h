// The text format for problems, one statement per line (README.md has the
// full description):
//
//   # threads of a block
//   param max_threads = 1024
//   var warps in 1..32
//   var threads in 32..1024 multiple of 32 descending
//   var tile in {16, 32, 64}
//   var cluster in 1..16 power of 2
//   order tile, warps
//   fits: threads <= max_threads
//   threads == 32 * warps
//   (threads * tile) % 256 == 0
//   maximize threads
#pragma once

#include <string>
#include <string_view>

#include "flashrnn/tune/errors.h"
#include "flashrnn/tune/problem.h"

namespace flashrnn::tune {

// A malformed problem text; what() reads "file:line:column: message".
class ParseError : public ProblemError {
 public:
  ParseError(std::string file, int line, int column, const std::string& message);
  const std::string& file() const { return file_; }
  int line() const { return line_; }
  int column() const { return column_; }
  const std::string& message() const { return message_; }

 private:
  std::string file_;
  int line_;
  int column_;
  std::string message_;
};

// `file_name` only labels error messages.
Problem parse_problem(std::string_view text, std::string_view file_name = "<input>");
// Reads and parses a file; throws ProblemError if it cannot be read.
Problem load_problem(const std::string& path);

}  // namespace flashrnn::tune

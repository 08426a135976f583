// Private: a one-line progress display on stderr ("\r" updates on a
// terminal; an occasional full line when stderr is a file or pipe).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace flashtrain::data {

class ProgressLine {
 public:
  ProgressLine(std::string label, std::int64_t total_documents, bool enabled);
  void update(std::int64_t documents, std::int64_t tokens, std::int64_t bytes);
  // Prints the final state and ends the line.
  void finish(std::int64_t documents, std::int64_t tokens, std::int64_t bytes);

 private:
  void print(std::int64_t documents, std::int64_t tokens, std::int64_t bytes, bool final);

  std::string label_;
  std::int64_t total_;
  bool enabled_;
  bool terminal_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_print_;
};

}  // namespace flashtrain::data

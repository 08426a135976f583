// The error every data component throws for bad files and bad input: the
// message names the problem precisely (file, offset, expected vs found).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace flashtrain::data {

class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Shards that hold fewer windows than one global batch takes: the settings
// (sequence length, batch, ranks), not the files, are what a user changes.
class TooFewWindows : public DataError {
 public:
  TooFewWindows(const std::string& what, std::int64_t windows, std::int64_t global_batch)
      : DataError(what), windows(windows), global_batch(global_batch) {}
  std::int64_t windows;
  std::int64_t global_batch;
};

}  // namespace flashtrain::data

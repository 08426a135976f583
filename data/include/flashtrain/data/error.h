// The error every data component throws for bad files and bad input: the
// message names the problem precisely (file, offset, expected vs found).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

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

// A saved loader position (LoaderCursor) that this loader cannot continue:
// `setting` -- "seed", "shuffle", "sequence_length" or "data" (the shards) --
// differs, as saved and as now.
class CursorMismatch : public DataError {
 public:
  CursorMismatch(const std::string& what, std::string setting, std::string saved, std::string now)
      : DataError(what), setting(std::move(setting)), saved(std::move(saved)), now(std::move(now)) {}
  std::string setting;
  std::string saved;
  std::string now;
};

}  // namespace flashtrain::data

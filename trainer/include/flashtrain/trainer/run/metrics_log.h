// JSON-lines metrics: one JSON object per line, appended and flushed as it is
// written, so a crash loses at most the line being written and a resumed run
// continues the same file. Records carry "kind" ("train", "val", "event").
#pragma once

#include <cstdint>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace flashtrain::trainer {

class MetricsLog {
 public:
  // An empty path: a log that writes nothing. Creates missing directories;
  // throws std::runtime_error if the file cannot be opened for appending.
  explicit MetricsLog(const std::string& path);

  void write(const nlohmann::json& record);

  // For a run resumed at `step`: rewrites the file (atomically) without the
  // records of later steps, which the resumed run trains again, and without
  // lines a kill cut off, so the file keeps one record per step and kind.
  // Records without a step (a run's start) stay. Returns the lines dropped.
  std::int64_t drop_after(std::int64_t step);
  // For a run that starts from step 0: empties the file (atomically), whose
  // records are of an earlier start that left no checkpoint to continue
  // (killed before its first one, or restarted with checkpoint.resume = none);
  // this run trains those steps again. Returns the lines dropped.
  std::int64_t start_over();
  bool enabled() const { return out_.is_open(); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::ofstream out_;
};

}  // namespace flashtrain::trainer

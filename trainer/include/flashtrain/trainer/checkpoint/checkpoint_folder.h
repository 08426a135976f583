// The checkpoint directories of a run, without looking inside the files:
// naming, listing, finding the newest valid one, keep-last-k, and cleaning up
// after crashed saves. A checkpoint is <folder>/step_<8 digits> holding a
// manifest.json (staged_directory.h); a directory without one was never
// finished and is ignored.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace flashtrain::trainer {

struct CheckpointEntry {
  std::int64_t step = 0;
  std::filesystem::path path;
};

struct SkippedCheckpoint {
  CheckpointEntry entry;
  std::string reason;
};

class CheckpointFolder {
 public:
  explicit CheckpointFolder(std::filesystem::path folder);

  const std::filesystem::path& path() const { return folder_; }
  // <folder>/step_00000100 for step 100.
  std::filesystem::path path_for_step(std::int64_t step) const;

  // Checkpoints with a manifest, oldest first (none if the folder is missing).
  std::vector<CheckpointEntry> complete() const;
  // step_N directories without a manifest: saves that never finished.
  std::vector<CheckpointEntry> unfinished() const;

  // The newest checkpoint whose files match its manifest (sizes and
  // checksums). Newer ones that are unfinished or fail the check are skipped
  // and listed in `skipped`, newest first.
  std::optional<CheckpointEntry> latest_valid(std::vector<SkippedCheckpoint>* skipped = nullptr) const;

  // Renames an unusable checkpoint directory to "<name>.invalid-<k>" (free k),
  // out of the way of new saves and of keep-last-k, without deleting what it
  // holds. Returns the new path.
  std::filesystem::path set_aside(const std::filesystem::path& directory) const;

  // Removes complete checkpoints beyond the newest `keep_last` (0: keeps all),
  // oldest first; each is renamed to a staging name before it is deleted, so
  // a crash midway never leaves a step_N with missing files. Returns them.
  std::vector<std::filesystem::path> prune(std::int64_t keep_last) const;

  // Removes staging directories of processes that no longer run (saves and
  // deletions a crash interrupted). Returns them.
  std::vector<std::filesystem::path> remove_stale_staging() const;

 private:
  std::vector<CheckpointEntry> step_directories(bool with_manifest) const;
  std::filesystem::path folder_;
};

// The step of a checkpoint directory name "step_<digits>"; nullopt otherwise.
std::optional<std::int64_t> checkpoint_step(const std::string& directory_name);

}  // namespace flashtrain::trainer

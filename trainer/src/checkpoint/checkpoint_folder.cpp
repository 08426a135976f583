#include "flashtrain/trainer/checkpoint/checkpoint_folder.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <stdexcept>

#include "flashtrain/trainer/checkpoint/remove_tree.h"
#include "flashtrain/trainer/checkpoint/staged_directory.h"

namespace flashtrain::trainer {
namespace fs = std::filesystem;

std::optional<std::int64_t> checkpoint_step(const std::string& name) {
  const std::string prefix = "step_";
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
      name.size() > prefix.size() + 18)
    return std::nullopt;
  std::int64_t step = 0;
  for (std::size_t i = prefix.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    step = step * 10 + (name[i] - '0');
  }
  return step;
}

CheckpointFolder::CheckpointFolder(fs::path folder) : folder_(std::move(folder)) {}

fs::path CheckpointFolder::path_for_step(std::int64_t step) const {
  if (step < 0) throw std::invalid_argument("checkpoint step must be >= 0, got " + std::to_string(step));
  char name[32];
  std::snprintf(name, sizeof name, "step_%08lld", static_cast<long long>(step));
  return folder_ / name;
}

std::vector<CheckpointEntry> CheckpointFolder::step_directories(bool with_manifest) const {
  std::vector<CheckpointEntry> found;
  std::error_code error;
  if (!fs::is_directory(folder_, error)) return found;
  for (const fs::directory_entry& entry : fs::directory_iterator(folder_)) {
    const auto step = checkpoint_step(entry.path().filename().string());
    if (!step || !entry.is_directory(error)) continue;
    if (fs::is_regular_file(entry.path() / kManifestFile, error) == with_manifest)
      found.push_back({*step, entry.path()});
  }
  std::sort(found.begin(), found.end(),
            [](const CheckpointEntry& a, const CheckpointEntry& b) { return a.step < b.step; });
  return found;
}

std::vector<CheckpointEntry> CheckpointFolder::complete() const { return step_directories(true); }

std::vector<CheckpointEntry> CheckpointFolder::unfinished() const { return step_directories(false); }

std::optional<CheckpointEntry> CheckpointFolder::latest_valid(std::vector<SkippedCheckpoint>* skipped) const {
  // Newest first over finished and unfinished ones alike.
  std::vector<std::pair<CheckpointEntry, bool>> candidates;
  for (const CheckpointEntry& entry : complete()) candidates.push_back({entry, true});
  for (const CheckpointEntry& entry : unfinished()) candidates.push_back({entry, false});
  std::sort(candidates.begin(), candidates.end(),
            [](const auto& a, const auto& b) { return a.first.step > b.first.step; });
  for (const auto& [entry, finished] : candidates) {
    if (!finished) {
      if (skipped) skipped->push_back({entry, std::string("no ") + kManifestFile + " (a save that never finished)"});
      continue;
    }
    try {
      verify_manifest(entry.path);
      return entry;
    } catch (const std::exception& e) {
      if (skipped) skipped->push_back({entry, e.what()});
    }
  }
  return std::nullopt;
}

fs::path CheckpointFolder::set_aside(const fs::path& directory) const {
  std::error_code error;
  fs::path aside;
  for (int k = 0;; ++k) {
    aside = fs::path(directory.string() + ".invalid-" + std::to_string(k));
    if (!fs::exists(aside, error)) break;
  }
  fs::rename(directory, aside);
  return aside;
}

std::vector<fs::path> CheckpointFolder::prune(std::int64_t keep_last) const {
  std::vector<fs::path> removed;
  if (keep_last <= 0) return removed;
  const std::vector<CheckpointEntry> done = complete();
  if (std::int64_t(done.size()) <= keep_last) return removed;
  for (std::size_t i = 0; i + std::size_t(keep_last) < done.size(); ++i) {
    const fs::path doomed = staging_path_for(done[i].path);
    fs::rename(done[i].path, doomed);
    remove_tree(doomed);
    removed.push_back(done[i].path);
  }
  sync_directory(folder_);
  return removed;
}

std::vector<fs::path> CheckpointFolder::remove_stale_staging() const {
  std::vector<fs::path> removed;
  std::error_code error;
  if (!fs::is_directory(folder_, error)) return removed;
  for (const fs::directory_entry& entry : fs::directory_iterator(folder_)) {
    long pid = 0;
    if (!is_staging_name(entry.path().filename().string(), &pid)) continue;
    // kill(pid, 0) probes a process without signalling it; ESRCH: it is gone.
    if (::kill(pid_t(pid), 0) == 0 || errno != ESRCH) continue;
    try {
      remove_tree(entry.path());
      removed.push_back(entry.path());
    } catch (const std::runtime_error&) {
      // Not ours to remove after all (permissions): leave it.
    }
  }
  return removed;
}

}  // namespace flashtrain::trainer

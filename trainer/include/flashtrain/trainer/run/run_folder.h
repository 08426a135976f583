// What a training run checks of its folder and inputs before step 1, so that
// a problem stops the run at once with an error naming it, not at the first
// validation or save:
//
//   RunFolderLock lock(dump_folder);   // one run per folder
//   check_run_inputs(resolved);        // shards, tokenizer
//   check_writable(checkpoint_folder, "checkpoint.folder");
#pragma once

#include <filesystem>
#include <string>

#include "flashtrain/config/load.h"

namespace flashtrain::trainer {

// An exclusive advisory lock (flock) on <folder>/.flashtrain.lock, held while
// the object lives and released by the kernel if the process dies. A second
// run on the same folder throws std::runtime_error naming the holder's pid
// and `key`, the setting that names the folder.
class RunFolderLock {
 public:
  explicit RunFolderLock(const std::filesystem::path& folder, const std::string& key = "job.dump_folder");
  ~RunFolderLock();
  RunFolderLock(const RunFolderLock&) = delete;
  RunFolderLock& operator=(const RunFolderLock&) = delete;

 private:
  int fd_ = -1;
};

// Creates `folder` if missing and writes and removes a file in it; throws
// std::runtime_error naming `key` (the config key it comes from), the folder
// and the system's reason when that fails.
void check_writable(const std::filesystem::path& folder, const std::string& key);

// Opens every training and validation shard (header and size, shard_format.h)
// and loads the tokenizer, if the config names them; a bad one throws a
// ConfigError at its config key.
void check_run_inputs(const config::ResolvedConfig& resolved);

}  // namespace flashtrain::trainer

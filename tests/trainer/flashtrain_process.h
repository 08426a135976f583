// The flashtrain executable run as a child process, for the tests that meet
// it as users do (FLASHTRAIN_BINARY, run from FLASHTRAIN_SOURCE_DIR so that
// configs/ resolve).
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "scratch_dir.h"

namespace flashtrain::trainer::testing {

namespace fs = std::filesystem;

struct ProcessRun {
  int status = -1;  // exit status, or 128 + signal
  std::string output;  // stdout and stderr together
};

// Starts flashtrain with `args` (from the source tree, so configs/ resolve),
// output to `log`. Returns the child's pid.
// `env`: variables to set (or, with a value of nullptr, unset) in the child.
// `file_size_limit` (bytes, 0: none): no file the child writes may grow past
// it; a write that would fails as on a full disk (EFBIG instead of ENOSPC).
inline pid_t start(const std::vector<std::string>& args, const fs::path& log,
                   const std::vector<std::pair<std::string, const char*>>& env = {},
                   rlim_t file_size_limit = 0) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  if (file_size_limit > 0) {
    ::signal(SIGXFSZ, SIG_IGN);  // the write returns an error instead of killing the process
    const rlimit limit{file_size_limit, file_size_limit};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(126);
  }
  for (const auto& [name, value] : env) {
    if (value) ::setenv(name.c_str(), value, 1);
    else ::unsetenv(name.c_str());
  }
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ::dup2(fd, 1);
  ::dup2(fd, 2);
  if (::chdir(FLASHTRAIN_SOURCE_DIR) != 0) ::_exit(127);
  std::vector<char*> argv = {const_cast<char*>(FLASHTRAIN_BINARY)};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execv(FLASHTRAIN_BINARY, argv.data());
  ::_exit(127);
}

inline int wait_for(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

inline ProcessRun run_flashtrain(const std::vector<std::string>& args,
                                 const std::vector<std::pair<std::string, const char*>>& env = {},
                                 rlim_t file_size_limit = 0) {
  ScratchDir dir;
  ProcessRun r;
  r.status = wait_for(start(args, dir / "log", env, file_size_limit));
  r.output = read_file(dir / "log");
  return r;
}

// A state-tracking run small enough to take milliseconds per step; it needs no files.
inline std::vector<std::string> tiny_task_run(const fs::path& dump_folder) {
  return {"--config",           "configs/tasks_parity.toml",
          "--job.dump_folder=" + dump_folder.string(),
          "--model.dim=16",     "--model.n_heads=2",
          "--model.head_dim=8", "--model.n_layers=1",
          "--data.seq_len=16",  "--data.task_train_max_len=8",
          "--data.task_val_min_len=8", "--data.task_val_max_len=16",
          "--training.local_batch_size=4", "--training.mixed_precision=fp32",
          "--validation.every=0", "--metrics.log_every=1",
          "--checkpoint.interval=0", "--lr_scheduler.warmup_steps=2"};
}

inline void expect_clean_error(const ProcessRun& r, int status, const std::string& words) {
  EXPECT_EQ(r.status, status) << r.output;
  EXPECT_NE(r.output.find(words), std::string::npos) << r.output;
  for (const char* trace : {"terminate called", "Exception raised from", "frame #"})
    EXPECT_EQ(r.output.find(trace), std::string::npos) << "a stack trace leaked:\n" << r.output;
}

}  // namespace flashtrain::trainer::testing

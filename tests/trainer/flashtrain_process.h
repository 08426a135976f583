// The flashtrain executable run as a process from tests (FLASHTRAIN_BINARY,
// started in the source tree so that configs/ resolve).
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "scratch_dir.h"

namespace flashtrain::trainer::testing {

struct ProcessRun {
  int status = -1;  // exit status, or 128 + signal
  std::string output;  // stdout and stderr together
};

// Starts flashtrain with `args` (from the source tree, so configs/ resolve),
// output to `log`. Returns the child's pid.
inline pid_t start(const std::vector<std::string>& args, const std::filesystem::path& log) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
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

inline ProcessRun run_flashtrain(const std::vector<std::string>& args) {
  ScratchDir dir;
  ProcessRun r;
  r.status = wait_for(start(args, dir / "log"));
  r.output = read_file(dir / "log");
  return r;
}

inline void expect_clean_error(const ProcessRun& r, int status, const std::string& words) {
  EXPECT_EQ(r.status, status) << r.output;
  EXPECT_NE(r.output.find(words), std::string::npos) << r.output;
  for (const char* trace : {"terminate called", "Exception raised from", "frame #"})
    EXPECT_EQ(r.output.find(trace), std::string::npos) << "a stack trace leaked:\n" << r.output;
}

}  // namespace flashtrain::trainer::testing

#pragma once
// `flashtrain --nproc N`: one process per rank on this machine, each the same
// program with the same arguments, told its place through the torchrun
// variables (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT; a free port unless given). The launcher
//   - forwards SIGINT, SIGTERM, SIGHUP and SIGUSR1 to every rank (the ranks run
//     in their own process group, so a terminal's Ctrl-C reaches them once,
//     through the launcher);
//   - when a rank fails (non-zero status, or killed by a signal it was not
//     sent), names it, sends SIGTERM to the others and SIGKILL after a grace
//     period, and exits with the failed rank's status;
//   - takes the ranks down with it if it is killed itself (PR_SET_PDEATHSIG).
// Torch-free: it must start before anything initialises CUDA.
#include <chrono>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

namespace flashtrain::distributed {

// Set in each rank's environment by launch_local: the ranks read torchrun's
// variables, and the log names the launcher that started them.
inline constexpr const char* kLauncherVariable = "FLASHTRAIN_LAUNCHER";
inline constexpr const char* kLocalLauncherName = "flashtrain --nproc";

struct LaunchOptions {
  std::string executable;         // the program each rank runs
  std::vector<std::string> argv;  // its arguments, argv[0] included
  int nproc = 2;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;  // 0: a free port
  // After the first failure: how long the other ranks get to exit on SIGTERM.
  std::chrono::milliseconds grace{std::chrono::seconds(10)};
  // Set in every rank's environment after the launcher's variables (tests).
  std::vector<std::pair<std::string, std::string>> extra_env;
};

// Runs the ranks to the end. Returns 0 when every rank exited 0; the failed
// rank's exit status (128 + N when signal N killed it); 128 + N when the
// launcher forwarded signal N and the ranks stopped on it. Reports to `log`.
// Throws std::runtime_error when it cannot start (bad options, fork failure).
int launch_local(const LaunchOptions& options, std::ostream& log);

// A TCP port on 127.0.0.1 that was free a moment ago.
int find_free_port();

// The running program's own path (/proc/self/exe).
std::string self_executable();

}  // namespace flashtrain::distributed

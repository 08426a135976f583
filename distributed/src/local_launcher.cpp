#include "flashtrain/distributed/local_launcher.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ostream>
#include <set>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace flashtrain::distributed {
namespace {

std::atomic<int> g_signal{0};

extern "C" void on_launcher_signal(int signal_number) { g_signal.store(signal_number); }

// The signals the launcher forwards to every rank: the trainer's stop signals
// (trainer/README.md), so a closed terminal (SIGHUP) saves as Ctrl-C does.
constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1};
constexpr std::size_t kForwardedCount = sizeof kForwardedSignals / sizeof kForwardedSignals[0];

// Installs the forwarding handlers for the launcher's lifetime.
class SignalCatcher {
 public:
  SignalCatcher() {
    g_signal.store(0);
    struct sigaction action {};
    action.sa_handler = on_launcher_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    for (std::size_t i = 0; i < kForwardedCount; ++i) sigaction(kForwardedSignals[i], &action, &previous_[i]);
  }
  ~SignalCatcher() {
    for (std::size_t i = 0; i < kForwardedCount; ++i) sigaction(kForwardedSignals[i], &previous_[i], nullptr);
  }
  // The signal received since the last call, or 0.
  int take() { return g_signal.exchange(0); }

 private:
  struct sigaction previous_[kForwardedCount] {};
};

// Variables a rank must not inherit from the launcher's own environment: they
// would describe some other world.
bool is_world_variable(const std::string& name) {
  static const std::set<std::string> names = {"RANK",        "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                                              "MASTER_ADDR", "MASTER_PORT", "GROUP_RANK", "ROLE_RANK",
                                              kLauncherVariable};
  return names.count(name) || name.rfind("TORCHELASTIC_", 0) == 0;
}

std::vector<std::string> rank_environment(const LaunchOptions& o, int rank, int port) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    if (!is_world_variable(entry.substr(0, entry.find('=')))) env.push_back(entry);
  }
  env.push_back("RANK=" + std::to_string(rank));
  env.push_back("WORLD_SIZE=" + std::to_string(o.nproc));
  env.push_back("LOCAL_RANK=" + std::to_string(rank));
  env.push_back("LOCAL_WORLD_SIZE=" + std::to_string(o.nproc));
  env.push_back("MASTER_ADDR=" + o.master_addr);
  env.push_back("MASTER_PORT=" + std::to_string(port));
  env.push_back(std::string(kLauncherVariable) + "=" + kLocalLauncherName);
  for (const auto& [name, value] : o.extra_env) env.push_back(name + "=" + value);
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

struct Rank {
  int rank = 0;
  pid_t pid = -1;
  bool running = false;
  int status = 0;  // waitpid's
};

// Whether a rank exited as the trainer does when a stop signal reaches it
// directly (not through the launcher): its checkpoint saved, 128 + N.
int stop_signal_of(int status) {
  if (!WIFEXITED(status)) return 0;
  for (int stop : kForwardedSignals)
    if (WEXITSTATUS(status) == 128 + stop) return stop;
  return 0;
}

std::string describe_status(int status) {
  if (const int stop = stop_signal_of(status))
    return "stopped on signal " + std::to_string(stop) + " (" + strsignal(stop) + ") sent to it alone, exit status " +
           std::to_string(WEXITSTATUS(status));
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  return "ended with wait status " + std::to_string(status);
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// Whether a rank's end is what we asked for: success, or stopping on the
// signal we forwarded (the trainer saves and exits 128 + N, or dies of N).
bool expected_end(int status, int forwarded) {
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
  if (forwarded == 0) return false;
  return (WIFEXITED(status) && WEXITSTATUS(status) == 128 + forwarded) ||
         (WIFSIGNALED(status) && WTERMSIG(status) == forwarded);
}

// A rank leads its own process group: signal the group, so that whatever the
// rank started goes too.
void signal_rank(pid_t pid, int sig) {
  if (kill(-pid, sig) != 0) kill(pid, sig);
}

pid_t start_rank(const LaunchOptions& o, int rank, int port, pid_t launcher) {
  std::vector<std::string> args = o.argv;
  std::vector<std::string> env = rank_environment(o, rank, port);
  std::vector<char*> c_args = c_strings(args);
  std::vector<char*> c_env = c_strings(env);
  // Everything the child needs is made before fork: between fork and exec it
  // may only make async-signal-safe calls (the parent may have threads).
  const std::string exec_failed = "flashtrain: rank " + std::to_string(rank) + ": cannot execute " + o.executable + ": ";
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("--nproc: fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    // The child: its own process group, killed when the launcher dies.
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != launcher) _exit(1);  // the launcher died before prctl
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    for (int forwarded_signal : kForwardedSignals) sigaction(forwarded_signal, &default_action, nullptr);
    execve(o.executable.c_str(), c_args.data(), c_env.data());
    const char* reason = errno == ENOENT ? "no such file\n" : errno == EACCES ? "permission denied\n" : "exec failed\n";
    (void)!write(2, exec_failed.data(), exec_failed.size());
    (void)!write(2, reason, std::strlen(reason));
    _exit(127);
  }
  setpgid(pid, pid);  // also from here, so it holds before we ever signal the group
  return pid;
}

}  // namespace

int find_free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error(std::string("find_free_port: socket: ") + std::strerror(errno));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    const std::string error = std::strerror(errno);
    close(fd);
    throw std::runtime_error("find_free_port: " + error);
  }
  close(fd);
  return ntohs(address.sin_port);
}

std::string self_executable() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) throw std::runtime_error("cannot read /proc/self/exe: " + std::string(std::strerror(errno)));
  return std::string(path, std::size_t(n));
}

int launch_local(const LaunchOptions& o, std::ostream& log) {
  if (o.nproc < 1) throw std::runtime_error("--nproc must be >= 1, got " + std::to_string(o.nproc));
  if (o.argv.empty() || o.executable.empty()) throw std::runtime_error("launch_local: no program to run");
  const int port = o.master_port > 0 ? o.master_port : find_free_port();
  log << "flashtrain: starting " << o.nproc << " ranks on this machine (MASTER_ADDR=" << o.master_addr
      << " MASTER_PORT=" << port << ")" << std::endl;

  SignalCatcher signals;
  std::vector<Rank> ranks(std::size_t(o.nproc));
  const pid_t launcher = getpid();
  for (int r = 0; r < o.nproc; ++r) {
    try {
      ranks[r] = Rank{r, start_rank(o, r, port, launcher), true, 0};
    } catch (...) {
      for (int k = 0; k < r; ++k) kill(ranks[k].pid, SIGKILL);
      for (int k = 0; k < r; ++k) waitpid(ranks[k].pid, nullptr, 0);
      throw;
    }
  }

  using Clock = std::chrono::steady_clock;
  int forwarded = 0;          // the last signal forwarded to the ranks
  int failed_rank = -1;       // the first rank that failed
  int failed_status = 0;
  bool killing = false;       // SIGKILL sent after the grace period
  Clock::time_point kill_at{};
  int running = o.nproc;
  while (running > 0) {
    if (const int sig = signals.take()) {
      log << "flashtrain: received signal " << sig << "; forwarding it to the " << running << " running ranks"
          << std::endl;
      forwarded = sig;
      for (const Rank& r : ranks)
        if (r.running) signal_rank(r.pid, sig);
    }
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid < 0 && errno != EINTR && errno != ECHILD)
      throw std::runtime_error(std::string("--nproc: waitpid: ") + std::strerror(errno));
    if (pid > 0) {
      for (Rank& r : ranks) {
        if (r.pid != pid || !r.running) continue;
        r.running = false;
        r.status = status;
        --running;
        if (failed_rank < 0 && !expected_end(status, forwarded)) {
          failed_rank = r.rank;
          failed_status = status;
          log << "flashtrain: rank " << r.rank << " (pid " << pid << ") " << describe_status(status);
          if (running > 0) {
            log << "; stopping the other " << running << " rank" << (running == 1 ? "" : "s");
            for (const Rank& other : ranks)
              if (other.running) signal_rank(other.pid, SIGTERM);
            kill_at = Clock::now() + o.grace;
          }
          log << std::endl;
        } else if (!expected_end(status, forwarded)) {
          log << "flashtrain: rank " << r.rank << " " << describe_status(status) << std::endl;
        }
      }
      continue;  // reap everything that is ready before sleeping
    }
    if (failed_rank >= 0 && !killing && Clock::now() >= kill_at) {
      killing = true;
      log << "flashtrain: " << running << " rank(s) still running " << o.grace.count() / 1000.0
          << " s after SIGTERM; killing them" << std::endl;
      for (const Rank& r : ranks)
        if (r.running) signal_rank(r.pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (failed_rank >= 0) {
    // A rank stopped on its own signal took the others down with it: the job
    // stopped (each rank saves on the SIGTERM it got), it did not fail.
    log << "flashtrain: " << (stop_signal_of(failed_status) ? "stopped" : "failed") << ": rank " << failed_rank << " "
        << describe_status(failed_status) << std::endl;
    const int code = exit_code_of(failed_status);
    return code == 0 ? 1 : code;
  }
  return forwarded ? 128 + forwarded : 0;
}

}  // namespace flashtrain::distributed

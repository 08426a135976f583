// The --nproc launcher with tiny fake ranks (/bin/sh scripts): the world
// variables each rank gets, a failing rank taking the others down and being
// named, SIGKILL after the grace period, signal forwarding, exec failures.
#include "flashtrain/distributed/local_launcher.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace fd = flashtrain::distributed;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

struct TempDir {
  TempDir() {
    path = fs::temp_directory_path() / ("flashtrain_launcher_test_" + std::to_string(getpid()) + "_" +
                                        std::to_string(counter++));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  static inline int counter = 0;
  fs::path path;
};

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

fd::LaunchOptions shell_ranks(int nproc, const std::string& script, const fs::path& dir) {
  fd::LaunchOptions o;
  o.executable = "/bin/sh";
  o.argv = {"sh", "-c", script};
  o.nproc = nproc;
  o.extra_env = {{"OUT", dir.string()}};
  return o;
}

struct Result {
  int status;
  std::string log;
  double seconds;
};

Result launch(const fd::LaunchOptions& o) {
  std::ostringstream log;
  const auto start = std::chrono::steady_clock::now();
  const int status = fd::launch_local(o, log);
  return {status, log.str(), std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
}

}  // namespace

TEST(LocalLauncher, EveryRankGetsItsPlaceInTheWorld) {
  TempDir dir;
  // A stale world in the launcher's own environment must not leak into the ranks.
  setenv("TORCHELASTIC_USE_AGENT_STORE", "True", 1);
  setenv("LOCAL_WORLD_SIZE", "99", 1);
  const Result r = launch(shell_ranks(
      3,
      "echo \"$RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $MASTER_ADDR $MASTER_PORT "
      "${TORCHELASTIC_USE_AGENT_STORE:-unset}\" > $OUT/rank$RANK; echo \"$FLASHTRAIN_LAUNCHER\" >> $OUT/rank$RANK",
      dir.path));
  unsetenv("TORCHELASTIC_USE_AGENT_STORE");
  unsetenv("LOCAL_WORLD_SIZE");
  EXPECT_EQ(r.status, 0) << r.log;
  std::string port;
  for (int rank = 0; rank < 3; ++rank) {
    std::istringstream in(read(dir.path / ("rank" + std::to_string(rank))));
    std::string rk, world, local, local_world, addr, p, agent, launcher;
    in >> rk >> world >> local >> local_world >> addr >> p >> agent >> std::ws;
    std::getline(in, launcher);
    EXPECT_EQ(launcher, "flashtrain --nproc");  // the log's name for the launcher
    EXPECT_EQ(rk, std::to_string(rank));
    EXPECT_EQ(local, std::to_string(rank));
    EXPECT_EQ(world, "3");
    EXPECT_EQ(local_world, "3");
    EXPECT_EQ(addr, "127.0.0.1");
    EXPECT_EQ(agent, "unset");
    EXPECT_GT(std::stoi(p), 0);
    if (rank == 0) port = p;
    EXPECT_EQ(p, port);  // one rendezvous for all
  }
  EXPECT_NE(r.log.find("MASTER_PORT=" + port), std::string::npos) << r.log;
}

TEST(LocalLauncher, FailedRankIsNamedAndStopsTheOthers) {
  TempDir dir;
  // Rank 1 fails at once; rank 0 would run a minute, but records the SIGTERM.
  const Result r = launch(shell_ranks(
      2,
      "if [ $RANK = 1 ]; then while [ ! -e $OUT/up0 ]; do sleep 0.02; done; exit 3; fi; "
      "trap 'echo term > $OUT/rank0_term; exit 143' TERM; touch $OUT/up0; sleep 60 & wait",
      dir.path));
  EXPECT_EQ(r.status, 3) << r.log;
  EXPECT_LT(r.seconds, 10.0) << r.log;
  EXPECT_NE(r.log.find("rank 1 (pid"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("exited with status 3; stopping the other 1 rank"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("failed: rank 1 exited with status 3"), std::string::npos) << r.log;
  EXPECT_EQ(read(dir.path / "rank0_term"), "term\n");
}

// A stop signal sent to one rank alone (it saves and exits 128 + N) stops
// the job: the others get SIGTERM, and the log says stopped, not failed.
TEST(LocalLauncher, ARankStoppedBySignalStopsTheJobWithoutAFailure) {
  TempDir dir;
  const Result r = launch(shell_ranks(
      2,
      "if [ $RANK = 1 ]; then while [ ! -e $OUT/up0 ]; do sleep 0.02; done; exit 143; fi; "
      "trap 'exit 143' TERM; touch $OUT/up0; sleep 60 & wait",
      dir.path));
  EXPECT_EQ(r.status, 143) << r.log;
  EXPECT_NE(r.log.find("rank 1 (pid"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("stopped on signal 15 (Terminated) sent to it alone, exit status 143"), std::string::npos)
      << r.log;
  EXPECT_NE(r.log.find("flashtrain: stopped: rank 1"), std::string::npos) << r.log;
  EXPECT_EQ(r.log.find("failed"), std::string::npos) << r.log;
}

TEST(LocalLauncher, RankIgnoringSigtermIsKilledAfterTheGracePeriod) {
  TempDir dir;
  fd::LaunchOptions o = shell_ranks(
      2,
      "if [ $RANK = 0 ]; then while [ ! -e $OUT/up1 ]; do sleep 0.02; done; kill -9 $$; fi; "
      "trap '' TERM; touch $OUT/up1; sleep 60",
      dir.path);
  o.grace = 500ms;
  const Result r = launch(o);
  EXPECT_EQ(r.status, 128 + SIGKILL) << r.log;
  EXPECT_NE(r.log.find("rank 0 (pid"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("was killed by signal 9"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("killing them"), std::string::npos) << r.log;
  EXPECT_LT(r.seconds, 10.0) << r.log;
}

TEST(LocalLauncher, ForwardsSigtermToEveryRank) {
  TempDir dir;
  const fd::LaunchOptions o = shell_ranks(
      2, "trap 'echo stop > $OUT/stop$RANK; exit 143' TERM; touch $OUT/up$RANK; sleep 60 & wait", dir.path);
  std::thread signaller([&] {
    // Once both ranks are up (their traps installed), signal the launcher, i.e. this process.
    for (int i = 0; i < 500 && !(fs::exists(dir.path / "up0") && fs::exists(dir.path / "up1")); ++i)
      std::this_thread::sleep_for(10ms);
    kill(getpid(), SIGTERM);
  });
  const Result r = launch(o);
  signaller.join();
  EXPECT_EQ(r.status, 128 + SIGTERM) << r.log;
  EXPECT_NE(r.log.find("received signal 15; forwarding it to the 2 running ranks"), std::string::npos) << r.log;
  EXPECT_EQ(r.log.find("failed"), std::string::npos) << r.log;  // stopping on request is no failure
  EXPECT_EQ(read(dir.path / "stop0"), "stop\n");
  EXPECT_EQ(read(dir.path / "stop1"), "stop\n");
}

TEST(LocalLauncher, MissingProgramFailsWith127) {
  TempDir dir;
  fd::LaunchOptions o = shell_ranks(2, "", dir.path);
  o.executable = (dir.path / "no-such-program").string();
  const Result r = launch(o);
  EXPECT_EQ(r.status, 127) << r.log;
  EXPECT_NE(r.log.find("exited with status 127"), std::string::npos) << r.log;
}

TEST(LocalLauncher, BadOptionsAreErrors) {
  fd::LaunchOptions o;
  std::ostringstream log;
  EXPECT_THROW(fd::launch_local(o, log), std::runtime_error);  // no program
  o.executable = "/bin/true";
  o.argv = {"true"};
  o.nproc = 0;
  EXPECT_THROW(fd::launch_local(o, log), std::runtime_error);
}

TEST(LocalLauncher, FreePortIsBindable) {
  const int port = fd::find_free_port();
  EXPECT_GT(port, 0);
  EXPECT_LT(port, 65536);
}

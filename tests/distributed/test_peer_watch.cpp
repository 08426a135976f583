// Peer liveness (a gone process, a zombie) and watched waits (completion,
// timeout, a gone peer named at once).
#include "flashtrain/distributed/peer_liveness.h"
#include "flashtrain/distributed/watched_wait.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace fd = flashtrain::distributed;
using namespace std::chrono_literals;

TEST(PeerLiveness, ExitedChildIsGoneEvenBeforeItIsReaped) {
  EXPECT_TRUE(fd::process_alive(getpid()));
  const pid_t child = fork();
  if (child == 0) _exit(0);
  // Wait for its exit without reaping it (WNOWAIT): a zombie, which
  // kill(pid, 0) still finds.
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, child, &info, WEXITED | WNOWAIT), 0);
  EXPECT_EQ(kill(child, 0), 0);
  EXPECT_FALSE(fd::process_alive(child));
  waitpid(child, nullptr, 0);
  EXPECT_FALSE(fd::process_alive(child));
  EXPECT_FALSE(fd::process_alive(0));
}

TEST(PeerLiveness, GoneLocalPeersSkipsSelfAndOtherHosts) {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  const std::string host = fd::this_host();
  const std::vector<fd::PeerProcess> peers = {
      {0, host, static_cast<long>(getpid())},  // alive
      {1, host, static_cast<long>(child)},     // gone
      {2, "elsewhere", static_cast<long>(child)},  // cannot be checked from here
  };
  const auto gone = fd::gone_local_peers(peers, host, 0);
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0].rank, 1);
  EXPECT_EQ(gone[0].describe(), "rank 1 (pid " + std::to_string(child) + " on " + host + ")");
  // Rank 1 asking about itself (as if it were the gone one) skips itself.
  EXPECT_TRUE(fd::gone_local_peers(peers, host, 1).empty());
}

TEST(PeerLiveness, EncodeDecodeAndBadText) {
  const fd::PeerProcess p{3, "gpu-7", 4242};
  const fd::PeerProcess q = fd::PeerProcess::decode(3, p.encode());
  EXPECT_EQ(q.host, "gpu-7");
  EXPECT_EQ(q.pid, 4242);
  EXPECT_EQ(q.rank, 3);
  EXPECT_THROW(fd::PeerProcess::decode(1, "gpu-7"), std::invalid_argument);
  EXPECT_THROW(fd::PeerProcess::decode(1, "gpu-7 x"), std::invalid_argument);
  EXPECT_THROW(fd::PeerProcess::decode(1, "gpu-7 12 extra"), std::invalid_argument);
  EXPECT_THROW(fd::PeerProcess::decode(1, "gpu-7 -5"), std::invalid_argument);
}

TEST(WatchedWait, ReturnsWhenDone) {
  std::atomic<int> polls{0};
  fd::WaitWatch watch;
  watch.timeout = 5s;
  fd::wait_watched([&] { return ++polls >= 50; }, "all-reduce #0", watch);
  EXPECT_EQ(polls.load(), 50);
}

TEST(WatchedWait, TimesOutNamingTheRankAndTheCollective) {
  fd::WaitWatch watch;
  watch.rank = 2;
  watch.timeout = 300ms;
  const auto start = std::chrono::steady_clock::now();
  try {
    fd::wait_watched([] { return false; }, "all-reduce #7 (64 bytes)", watch);
    FAIL() << "expected a timeout";
  } catch (const fd::CommunicationError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("rank 2: all-reduce #7 (64 bytes) did not complete within 0.3 s", 0), 0u) << msg;
  }
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, 300ms);
  EXPECT_LT(waited, 3s);
}

TEST(WatchedWait, GonePeerEndsTheWaitLongBeforeTheTimeout) {
  fd::WaitWatch watch;
  watch.rank = 0;
  watch.timeout = 60s;
  watch.peer_check_interval = 50ms;
  std::atomic<int> checks{0};
  watch.gone_peers = [&]() -> std::vector<std::string> {
    if (++checks < 3) return {};
    return {"rank 1 (pid 99 on host)"};
  };
  const auto start = std::chrono::steady_clock::now();
  try {
    fd::wait_watched([] { return false; }, "broadcast #0 from rank 0", watch);
    FAIL() << "expected an error";
  } catch (const fd::CommunicationError& e) {
    EXPECT_STREQ(e.what(), "rank 0: broadcast #0 from rank 0 cannot complete: rank 1 (pid 99 on host) has exited");
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_EQ(checks.load(), 3);
}

TEST(WatchedWait, QuickWaitsNeverCheckPeers) {
  fd::WaitWatch watch;
  watch.peer_check_interval = 10s;
  bool checked = false;
  watch.gone_peers = [&] {
    checked = true;
    return std::vector<std::string>{"x"};
  };
  int polls = 0;
  fd::wait_watched([&] { return ++polls > 1000; }, "all-reduce #1", watch);
  EXPECT_FALSE(checked);
}

#include "fake_communicator.h"
#include "flashtrain/distributed/startup_check.h"

#include <gtest/gtest.h>

#include <thread>

namespace fd = flashtrain::distributed;

namespace {

// Runs check_ranks_agree on one thread per simulated rank; returns each
// rank's error message ("" when it passed).
std::vector<std::string> run_check(const std::vector<std::int64_t>& counts,
                                   const std::vector<std::string>& hashes) {
  const int world_size = static_cast<int>(counts.size());
  auto world = fd::FakeWorld::create(world_size);
  std::vector<std::string> errors(world_size);
  std::vector<std::thread> threads;
  for (int r = 0; r < world_size; ++r) {
    threads.emplace_back([&, r] {
      try {
        fd::check_ranks_agree(*world->communicator(r), counts[r], hashes[r]);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

}  // namespace

TEST(StartupCheck, AgreeingRanksPass) {
  for (const auto& e : run_check({123, 123, 123}, {"abc", "abc", "abc"})) EXPECT_EQ(e, "");
}

TEST(StartupCheck, DifferentParameterCountNamesTheRank) {
  auto errors = run_check({123, 123, 124, 123}, {"h", "h", "h", "h"});
  for (const auto& e : errors)
    EXPECT_NE(e.find("rank 2 has 124 parameters but rank 0 has 123"), std::string::npos) << e;
}

TEST(StartupCheck, DifferentConfigHashNamesTheRank) {
  auto errors = run_check({7, 7, 7}, {"hash-a", "hash-b", "hash-a"});
  for (const auto& e : errors)
    EXPECT_NE(e.find("rank 1's config hash differs from rank 0's"), std::string::npos) << e;
}

TEST(StartupCheck, SingleProcessAlwaysAgrees) {
  fd::SingleProcessCommunicator comm;
  EXPECT_NO_THROW(fd::check_ranks_agree(comm, 5, "x"));
  EXPECT_NE(fd::fingerprint("a"), fd::fingerprint("b"));
}

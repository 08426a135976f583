// The stop signals (SIGINT, SIGTERM, SIGHUP, SIGUSR1) only ask the run to stop:
// the first one is recorded, and repeated ones never end the process, so the
// save that follows them completes.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdlib>

#include "flashtrain/trainer/run/stop_signal.h"

namespace flashtrain::trainer {
namespace {

class StopSignal : public ::testing::TestWithParam<int> {};

TEST_P(StopSignal, RepeatedSignalsAreRecordedOnceAndDoNotEndTheProcess) {
  const int first = GetParam();
  // In a child process: a signal that ended the process would end the test.
  EXPECT_EXIT(
      {
        StopSignalHandlers handlers;
        ::raise(first);
        ::raise(first);
        ::raise(SIGINT);
        ::raise(SIGHUP);
        std::_Exit(stop_signal_received() == first ? 0 : 3);
      },
      ::testing::ExitedWithCode(0), "signal [0-9]+ again: already stopping; saving the checkpoint");
}

INSTANTIATE_TEST_SUITE_P(EachStopSignal, StopSignal, ::testing::Values(SIGINT, SIGTERM, SIGHUP, SIGUSR1),
                         [](const ::testing::TestParamInfo<int>& info) {
                           switch (info.param) {
                             case SIGINT: return std::string("Sigint");
                             case SIGTERM: return std::string("Sigterm");
                             case SIGHUP: return std::string("Sighup");
                             default: return std::string("Sigusr1");
                           }
                         });

TEST(StopSignalHandlers, RestoreThePreviousActionsAndLeaveSigquitAlone) {
  struct sigaction before {}, during {}, quit {}, after {};
  sigaction(SIGHUP, nullptr, &before);
  {
    StopSignalHandlers handlers;
    sigaction(SIGHUP, nullptr, &during);
    sigaction(SIGQUIT, nullptr, &quit);
    EXPECT_NE(during.sa_handler, before.sa_handler);
    EXPECT_EQ(quit.sa_handler, SIG_DFL) << "SIGQUIT keeps its meaning: end now, without saving";
  }
  sigaction(SIGHUP, nullptr, &after);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
}

}  // namespace
}  // namespace flashtrain::trainer

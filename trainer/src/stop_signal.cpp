#include "flashtrain/trainer/stop_signal.h"

#include <signal.h>

#include <atomic>

namespace flashtrain::trainer {
namespace {

std::atomic<int> g_received{0};
struct sigaction g_previous_int, g_previous_term;

extern "C" void on_stop_signal(int signal_number) {
  g_received.store(signal_number);
  // Only async-signal-safe calls here: sigaction is one.
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  sigaction(signal_number, &default_action, nullptr);
}

}  // namespace

StopSignalHandlers::StopSignalHandlers() {
  g_received.store(0);
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // blocking reads and writes continue
  sigaction(SIGINT, &action, &g_previous_int);
  sigaction(SIGTERM, &action, &g_previous_term);
}

StopSignalHandlers::~StopSignalHandlers() {
  sigaction(SIGINT, &g_previous_int, nullptr);
  sigaction(SIGTERM, &g_previous_term, nullptr);
}

int stop_signal_received() { return g_received.load(); }

}  // namespace flashtrain::trainer

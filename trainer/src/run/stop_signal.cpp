#include "flashtrain/trainer/run/stop_signal.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>

namespace flashtrain::trainer {
namespace {

constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1};
constexpr std::size_t kSignalCount = sizeof kStopSignals / sizeof kStopSignals[0];

std::atomic<int> g_received{0};
struct sigaction g_previous[kSignalCount];

// Only async-signal-safe calls in the handler: write is one.
void say_already_stopping(int signal_number) {
  static const char kBefore[] = "flashtrain: signal ";
  static const char kAfter[] =
      " again: already stopping; saving the checkpoint (SIGQUIT or SIGKILL ends the process without it)\n";
  char digits[4];
  std::size_t count = 0;
  for (int n = signal_number; count == 0 || n > 0; n /= 10) digits[count++] = static_cast<char>('0' + n % 10);
  char number[4];
  for (std::size_t i = 0; i < count; ++i) number[i] = digits[count - 1 - i];
  (void)!::write(STDERR_FILENO, kBefore, sizeof kBefore - 1);
  (void)!::write(STDERR_FILENO, number, count);
  (void)!::write(STDERR_FILENO, kAfter, sizeof kAfter - 1);
}

extern "C" void on_stop_signal(int signal_number) {
  int none = 0;
  // The first signal decides the exit status; later ones change nothing (the
  // default action stays off, so they cannot interrupt the save).
  if (!g_received.compare_exchange_strong(none, signal_number)) say_already_stopping(signal_number);
}

}  // namespace

StopSignalHandlers::StopSignalHandlers() {
  g_received.store(0);
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  for (int signal_number : kStopSignals) sigaddset(&action.sa_mask, signal_number);  // one handler at a time
  action.sa_flags = SA_RESTART;  // blocking reads and writes continue
  for (std::size_t i = 0; i < kSignalCount; ++i) sigaction(kStopSignals[i], &action, &g_previous[i]);
}

StopSignalHandlers::~StopSignalHandlers() {
  for (std::size_t i = 0; i < kSignalCount; ++i) sigaction(kStopSignals[i], &g_previous[i], nullptr);
}

int stop_signal_received() { return g_received.load(); }

}  // namespace flashtrain::trainer

// SIGINT, SIGTERM, SIGHUP and SIGUSR1 as a request to stop: the handler only
// records the signal; the train loop polls stop_signal_received() between
// steps, saves a checkpoint and exits 128 + N. The handlers stay installed
// until the save is done: a repeated signal (a second Ctrl-C, `timeout -s INT`
// reaching a process group, a supervisor that signals twice) only prints that
// the run is already stopping, so no burst of signals can end the process
// halfway through its checkpoint. SIGQUIT (Ctrl-\) keeps its default meaning,
// the way to end a run at once without saving, as SIGKILL is.
#pragma once

namespace flashtrain::trainer {

// Installs the handlers while alive and restores the previous ones after.
class StopSignalHandlers {
 public:
  StopSignalHandlers();
  ~StopSignalHandlers();
  StopSignalHandlers(const StopSignalHandlers&) = delete;
  StopSignalHandlers& operator=(const StopSignalHandlers&) = delete;
};

// The first stop signal received since the handlers were installed, or 0.
int stop_signal_received();

}  // namespace flashtrain::trainer

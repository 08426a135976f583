// SIGINT and SIGTERM as a request to stop: the handler only records the
// signal; the train loop polls stop_signal_received() between steps, saves a
// checkpoint and exits. The first signal also restores the default action, so
// a second Ctrl-C ends the process at once (checkpoints are written
// atomically, so that loses at most the save in progress).
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

// The signal number received since the handlers were installed, or 0.
int stop_signal_received();

}  // namespace flashtrain::trainer

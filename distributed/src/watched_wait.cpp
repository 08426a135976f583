#include "flashtrain/distributed/watched_wait.h"

#include <cstdio>
#include <thread>

namespace flashtrain::distributed {

void wait_watched(const std::function<bool()>& done, const std::string& what, const WaitWatch& watch) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto next_check = start + watch.peer_check_interval;
  // Spin briefly (most waits end within microseconds of the collective, and
  // the exposed-communication metric should not include sleep granularity),
  // then sleep in short steps.
  const auto spin_until = start + std::chrono::microseconds(200);
  while (!done()) {
    const auto now = Clock::now();
    if (now < spin_until) {
      std::this_thread::yield();
      continue;
    }
    if (watch.gone_peers && now >= next_check) {
      const std::vector<std::string> gone = watch.gone_peers();
      if (!gone.empty()) {
        std::string names;
        for (const std::string& g : gone) names += (names.empty() ? "" : ", ") + g;
        throw CommunicationError("rank " + std::to_string(watch.rank) + ": " + what + " cannot complete: " +
                                 names + (gone.size() == 1 ? " has" : " have") + " exited");
      }
      next_check = now + watch.peer_check_interval;
    }
    if (now - start >= watch.timeout) {
      const auto seconds = std::chrono::duration_cast<std::chrono::milliseconds>(watch.timeout).count() / 1000.0;
      char text[32];
      std::snprintf(text, sizeof text, "%g", seconds);
      throw CommunicationError("rank " + std::to_string(watch.rank) + ": " + what + " did not complete within " +
                               text + " s (parallelism.timeout_seconds): another rank died, hangs, or runs "
                               "different collectives");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace flashtrain::distributed

#pragma once
// Waiting for a collective without ever hanging: poll its completion, check
// for dead peers while it takes long, give up at a deadline. Failures are
// CommunicationError, whose message starts with the waiting rank and names
// the gone peer when one is known. After one, the process's communicators are
// unusable: callers report it and exit (no checkpoint, no further collective).
#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace flashtrain::distributed {

class CommunicationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct WaitWatch {
  int rank = 0;
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  // Checking for gone peers starts after this much waiting, and repeats at
  // this interval (normal waits are far shorter and never check).
  std::chrono::milliseconds peer_check_interval{500};
  // Descriptions of the peers known to be gone ("rank 1 (pid 42 on host)");
  // empty when none is, or unknown.
  std::function<std::vector<std::string>()> gone_peers;
};

// Returns once done() is true. Throws CommunicationError when the timeout
// passes ("rank 0: all-reduce #12 did not complete within 600 s ...") or a
// peer is gone ("rank 0: all-reduce #12 cannot complete: rank 1 (...) has
// exited"). `what` names the collective. Exceptions from done() propagate.
void wait_watched(const std::function<bool()>& done, const std::string& what, const WaitWatch& watch);

}  // namespace flashtrain::distributed

#pragma once
// The communicator for the environment this process was started in: a
// single process gets SingleProcessCommunicator (no store, no NCCL); ranks of
// a distributed run meet through the TCPStore (rendezvous.h) and get NCCL or
// the store backend (backend_choice.h).
#include <chrono>
#include <iosfwd>
#include <memory>
#include <string>

#include "flashtrain/distributed/communicator.h"
#include "flashtrain/distributed/environment.h"

namespace flashtrain::distributed {

struct CommunicatorOptions {
  std::string backend = "auto";  // parallelism.backend
  torch::Device device{torch::kCPU};  // this rank's (cuda:LOCAL_RANK for NCCL)
  // Rendezvous and per-collective limit (parallelism.timeout_seconds).
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
};

// `vars`: the launcher variables (current_environment()). Notes what it set
// up to `log`. Throws CommunicationError when the ranks cannot meet,
// std::invalid_argument for a backend that does not fit the device.
std::shared_ptr<Communicator> make_communicator(const Environment& env, const EnvMap& vars,
                                                const CommunicatorOptions& options, std::ostream& log);

}  // namespace flashtrain::distributed

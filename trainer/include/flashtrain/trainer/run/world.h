// The ranks a training run spans, as the trainer sees them: its own rank, the
// device it trains on and the communicator. One process (no launcher
// variables) is a world of size 1 with no store and no NCCL at all.
#pragma once

#include <iosfwd>
#include <memory>
#include <string>

#include <torch/types.h>

#include "flashtrain/config/resolved_config.h"
#include "flashtrain/distributed/communicator.h"
#include "flashtrain/distributed/environment.h"

namespace flashtrain::trainer {

struct World {
  std::shared_ptr<distributed::Communicator> comm;
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  torch::Device device{torch::kCPU};

  bool distributed() const { return size > 1; }
  bool is_rank0() const { return rank == 0; }
};

// A single process on the device training.device resolves to.
World single_process_world(const config::ResolvedConfig& resolved);

// From the launcher's environment: a single process as above, or rank `rank`
// on cuda:LOCAL_RANK (or the CPU) with a communicator that has met the other
// ranks. Throws ConfigError for a device or backend that cannot serve the
// ranks, distributed::CommunicationError when they cannot meet.
World make_world(const config::ResolvedConfig& resolved, const distributed::Environment& env,
                 const distributed::EnvMap& vars, std::ostream& log);

}  // namespace flashtrain::trainer

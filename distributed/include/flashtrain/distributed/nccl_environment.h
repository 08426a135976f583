#pragma once
// The NCCL and ProcessGroupNCCL variables flashtrain sets before creating its
// process group, unless the user set them (the user's value always wins):
//
//   NCCL_NVLS_ENABLE=0                 NVLink multicast (NVLS) off: on shared
//                                      multi-GPU hosts it can hang or fail at
//                                      communicator creation.
//   TORCH_NCCL_ASYNC_ERROR_HANDLING=1  the watchdog aborts the communicators and
//                                      tears the process down when a collective
//                                      fails or outlives its timeout, so a dead
//                                      peer never leaves a rank hanging forever.
//   TORCH_NCCL_ENABLE_TIMING=1         start events on every collective: the
//                                      all-reduce durations behind the overlap
//                                      metrics (Work::duration_seconds).
#include <string>
#include <utility>
#include <vector>

#include "flashtrain/distributed/environment.h"

namespace flashtrain::distributed {

using EnvAssignments = std::vector<std::pair<std::string, std::string>>;

// The assignments to make, given the variables already set (`current` holds
// whichever of them are set; absent = unset).
EnvAssignments nccl_environment_defaults(const EnvMap& current);

// Reads the real environment and setenv()s what nccl_environment_defaults
// returns; returns it too (for the start-up log).
EnvAssignments apply_nccl_environment_defaults();

}  // namespace flashtrain::distributed

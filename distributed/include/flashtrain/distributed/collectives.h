#pragma once
// Small collectives the trainer needs beyond gradients, on any Communicator
// (values travel as small CPU tensors; NCCL stages them through the GPU).
// Every rank must make the same calls in the same order.
#include <cstdint>
#include <string>
#include <vector>

#include "flashtrain/distributed/communicator.h"

namespace flashtrain::distributed {

// Element-wise sums over ranks of a few doubles (blocking).
std::vector<double> sum_over_ranks(Communicator& comm, const std::vector<double>& values);

// Element-wise maxima over ranks (e.g. a stop signal number, 0 for none).
std::vector<std::int64_t> max_over_ranks(Communicator& comm, const std::vector<std::int64_t>& values);

// `text` as rank `root` has it, on every rank.
std::string broadcast_string(Communicator& comm, const std::string& text, int root = 0);

}  // namespace flashtrain::distributed

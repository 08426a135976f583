#pragma once
// Small collectives the trainer needs beyond gradients, on any Communicator
// (values travel as small CPU tensors; NCCL stages them through the GPU).
// Every rank must make the same calls in the same order.
#include <string>
#include <vector>

#include "flashtrain/distributed/communicator.h"

namespace flashtrain::distributed {

// Element-wise sums over ranks of a few doubles (blocking).
std::vector<double> sum_over_ranks(Communicator& comm, const std::vector<double>& values);

// The largest of each rank's value (e.g. a stop signal number, 0 for none).
int max_over_ranks(Communicator& comm, int value);

// `text` as rank `root` has it, on every rank.
std::string broadcast_string(Communicator& comm, const std::string& text, int root = 0);

}  // namespace flashtrain::distributed

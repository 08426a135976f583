#pragma once
// At start-up, before training: every rank must hold the same model (parameter
// count) and the same resolved config (config hash, trainer/config print.h).
#include "flashtrain/distributed/communicator.h"

#include <cstdint>
#include <stdexcept>
#include <string>

namespace flashtrain::distributed {

class RankMismatch : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A collective: every rank calls it. Throws RankMismatch on every rank, naming
// the first rank that differs from rank 0 and what differs.
void check_ranks_agree(Communicator& comm, std::int64_t parameter_count,
                       const std::string& config_hash);

// 64-bit FNV-1a of a string (what check_ranks_agree compares).
std::uint64_t fingerprint(const std::string& text);

}  // namespace flashtrain::distributed

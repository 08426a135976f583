#include "flashtrain/distributed/startup_check.h"

#include <iomanip>
#include <sstream>

namespace flashtrain::distributed {

std::uint64_t fingerprint(const std::string& text) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

void check_ranks_agree(Communicator& comm, std::int64_t parameter_count,
                       const std::string& config_hash) {
  const int world = comm.world_size();
  const int rank = comm.rank();
  // An all-gather through a sum: each rank fills its own row.
  torch::Tensor table = torch::zeros({world, 2}, torch::kLong);
  table[rank][0] = parameter_count;
  table[rank][1] = static_cast<std::int64_t>(fingerprint(config_hash));
  comm.all_reduce_sum(table)->wait();
  auto t = table.accessor<std::int64_t, 2>();
  for (int r = 1; r < world; ++r) {
    if (t[r][0] != t[0][0]) {
      std::ostringstream msg;
      msg << "rank " << r << " has " << t[r][0] << " parameters but rank 0 has " << t[0][0]
          << " (every rank must build the same model)";
      throw RankMismatch(msg.str());
    }
    if (t[r][1] != t[0][1]) {
      std::ostringstream msg;
      msg << "rank " << r << "'s config hash differs from rank 0's (fingerprint " << std::hex
          << std::setw(16) << std::setfill('0') << static_cast<std::uint64_t>(t[r][1]) << " vs "
          << std::setw(16) << static_cast<std::uint64_t>(t[0][1])
          << "): every rank must run the same resolved config";
      throw RankMismatch(msg.str());
    }
  }
}

}  // namespace flashtrain::distributed

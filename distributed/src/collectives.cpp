#include "flashtrain/distributed/collectives.h"

#include <cstring>

namespace flashtrain::distributed {

std::vector<double> sum_over_ranks(Communicator& comm, const std::vector<double>& values) {
  if (comm.world_size() == 1 || values.empty()) return values;
  torch::Tensor t = torch::tensor(values, torch::kDouble);
  comm.all_reduce_sum(t)->wait();
  return std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
}

std::vector<std::int64_t> max_over_ranks(Communicator& comm, const std::vector<std::int64_t>& values) {
  if (comm.world_size() == 1 || values.empty()) return values;
  // A max through a sum: each rank fills its own row of a table.
  const auto n = static_cast<std::int64_t>(values.size());
  torch::Tensor table = torch::zeros({comm.world_size(), n}, torch::kLong);
  table[comm.rank()].copy_(torch::tensor(values, torch::kLong));
  comm.all_reduce_sum(table)->wait();
  const torch::Tensor maxima = std::get<0>(table.max(0)).contiguous();
  return std::vector<std::int64_t>(maxima.data_ptr<std::int64_t>(), maxima.data_ptr<std::int64_t>() + n);
}

std::string broadcast_string(Communicator& comm, const std::string& text, int root) {
  if (comm.world_size() == 1) return text;
  torch::Tensor length = torch::tensor({static_cast<std::int64_t>(text.size())}, torch::kLong);
  comm.broadcast(length, root)->wait();
  const std::int64_t n = length.item<std::int64_t>();
  if (n == 0) return "";
  torch::Tensor bytes = torch::zeros({n}, torch::kUInt8);
  if (comm.rank() == root) std::memcpy(bytes.data_ptr(), text.data(), text.size());
  comm.broadcast(bytes, root)->wait();
  return std::string(static_cast<const char*>(bytes.data_ptr()), std::size_t(n));
}

}  // namespace flashtrain::distributed

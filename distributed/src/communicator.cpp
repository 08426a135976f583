#include "flashtrain/distributed/communicator.h"

#include <sstream>
#include <stdexcept>
#include <thread>

namespace flashtrain::distributed {

void Communicator::wait_until(const std::function<bool()>& done, const std::string& /*what*/) {
  while (!done()) std::this_thread::yield();
}

std::shared_ptr<Work> SingleProcessCommunicator::all_reduce_sum(torch::Tensor) {
  return std::make_shared<CompletedWork>();
}
std::shared_ptr<Work> SingleProcessCommunicator::broadcast(torch::Tensor, int root) {
  if (root != 0) throw std::invalid_argument("broadcast: root " + std::to_string(root) +
                                             " out of range for world size 1");
  return std::make_shared<CompletedWork>();
}

void broadcast_parameters(Communicator& comm, const std::vector<torch::Tensor>& params) {
  torch::NoGradGuard no_grad;
  std::vector<std::shared_ptr<Work>> works;
  for (const auto& p : params) works.push_back(comm.broadcast(p, 0));
  for (auto& w : works) w->wait();
}

}  // namespace flashtrain::distributed

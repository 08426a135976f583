#include "flashtrain/distributed/backend_choice.h"

#include <stdexcept>

namespace flashtrain::distributed {

std::string choose_backend(const std::string& requested, bool on_cuda) {
  if (requested == "auto") return on_cuda ? "nccl" : "store";
  if (requested == "nccl" && !on_cuda)
    throw std::invalid_argument("parallelism.backend = nccl needs CUDA, but this run trains on the CPU; use auto "
                                "or store (or train on GPUs)");
  if (requested == "store" && on_cuda)
    throw std::invalid_argument("parallelism.backend = store sums CPU tensors through the TCP store; with CUDA "
                                "use auto or nccl");
  if (requested != "nccl" && requested != "store")
    throw std::invalid_argument("parallelism.backend = '" + requested + "': expected auto, nccl or store");
  return requested;
}

}  // namespace flashtrain::distributed

#pragma once
// Which collective backend a distributed run uses (parallelism.backend):
//   nccl   GPUs: c10d's ProcessGroupNCCL (c10d_communicator.h)
//   store  CPU ranks: sums through the rendezvous TCPStore (store_communicator.h);
//          slow, meant for tests and tiny models without GPUs
//   auto   nccl when training on CUDA, store on the CPU
#include <string>

namespace flashtrain::distributed {

// "nccl" or "store". Throws std::invalid_argument naming the mismatch (nccl
// without CUDA, store with CUDA, an unknown name).
std::string choose_backend(const std::string& requested, bool on_cuda);

}  // namespace flashtrain::distributed

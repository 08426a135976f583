#pragma once
// ProcessGroupNCCL, built in its own translation unit (it needs
// USE_C10D_NCCL and nccl.h; the rest of the library needs neither).
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/types.h>

#include <chrono>

namespace flashtrain::distributed {

// True when this build has ProcessGroupNCCL (nccl.h was found at configure time).
bool nccl_available();

// A process group for `device` (cuda:LOCAL_RANK), its NCCL communicator
// created now (every rank must call this). `timeout`: the watchdog's limit
// per collective; with TORCH_NCCL_ASYNC_ERROR_HANDLING it then tears the
// process down. Throws std::runtime_error when built without NCCL.
c10::intrusive_ptr<c10d::Backend> make_nccl_backend(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                    int world_size, torch::Device device,
                                                    std::chrono::milliseconds timeout);

}  // namespace flashtrain::distributed

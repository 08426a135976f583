// Compiled with USE_C10D_NCCL (and nccl.h on the include path) when CMake
// finds nccl.h; otherwise the stubs below say so at run time.
#include "flashtrain/distributed/nccl_backend.h"

#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <stdexcept>

namespace flashtrain::distributed {

#ifdef USE_C10D_NCCL

bool nccl_available() { return true; }

c10::intrusive_ptr<c10d::Backend> make_nccl_backend(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                    int world_size, torch::Device device,
                                                    std::chrono::milliseconds timeout) {
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  options->group_name = "flashtrain";
  options->group_desc = "data_parallel";
  auto group = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world_size, options);
  group->setBoundDeviceId(device);
  // The communicator now, not at the first collective: a rank that cannot
  // join fails here, before the model is built.
  group->eagerConnectSingleDevice(device);
  return group;
}

#else

bool nccl_available() { return false; }

c10::intrusive_ptr<c10d::Backend> make_nccl_backend(const c10::intrusive_ptr<c10d::Store>&, int, int,
                                                    torch::Device, std::chrono::milliseconds) {
  throw std::runtime_error("this flashtrain was built without NCCL (nccl.h was not found when configuring); "
                           "reconfigure with nccl.h installed, or train on one GPU");
}

#endif

}  // namespace flashtrain::distributed

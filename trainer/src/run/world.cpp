#include "flashtrain/trainer/run/world.h"

#include <c10/cuda/CUDAFunctions.h>
#include <torch/cuda.h>

#include <chrono>
#include <stdexcept>

#include "flashtrain/distributed/backend_choice.h"
#include "flashtrain/distributed/make_communicator.h"
#include "flashtrain/trainer/run/model_factory.h"
#include "flashtrain/trainer/run/world_rules.h"

namespace flashtrain::trainer {

World single_process_world(const config::ResolvedConfig& resolved) {
  World world;
  world.device = resolve_device(resolved);
  world.comm = std::make_shared<distributed::SingleProcessCommunicator>();
  return world;
}

World make_world(const config::ResolvedConfig& resolved, const distributed::Environment& env,
                 const distributed::EnvMap& vars, std::ostream& log) {
  const config::Config& c = resolved.config;
  try {
    check_nproc_fits(c.parallelism.nproc, env);
  } catch (const std::invalid_argument& e) {
    throw resolved.error_at({"parallelism.nproc"}, e.what());
  }
  if (!env.is_distributed()) return single_process_world(resolved);

  World world;
  world.rank = env.rank;
  world.size = env.world_size;
  world.local_rank = env.local_rank;
  const int gpus = torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
  try {
    world.device = torch::Device(choose_rank_device(c.training.device, env.local_rank, gpus));
  } catch (const std::invalid_argument& e) {
    throw resolved.error_at({"training.device"}, e.what());
  }
  // Before anything touches CUDA: otherwise every rank opens a context on GPU 0.
  if (world.device.is_cuda()) c10::cuda::set_device(world.device.index());

  distributed::CommunicatorOptions options;
  options.backend = c.parallelism.backend;
  options.device = world.device;
  options.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(c.parallelism.timeout_seconds * 1000.0));
  try {
    distributed::choose_backend(options.backend, world.device.is_cuda());
  } catch (const std::invalid_argument& e) {
    throw resolved.error_at({"parallelism.backend", "training.device"}, e.what());
  }
  world.comm = distributed::make_communicator(env, vars, options, log);
  return world;
}

}  // namespace flashtrain::trainer

#include "flashtrain/distributed/nccl_environment.h"

#include <cstdlib>

namespace flashtrain::distributed {
namespace {

const EnvAssignments& defaults() {
  static const EnvAssignments values = {
      {"NCCL_NVLS_ENABLE", "0"},
      {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"},
      {"TORCH_NCCL_ENABLE_TIMING", "1"},
  };
  return values;
}

}  // namespace

EnvAssignments nccl_environment_defaults(const EnvMap& current) {
  EnvAssignments out;
  for (const auto& [name, value] : defaults())
    if (current.find(name) == current.end()) out.emplace_back(name, value);
  return out;
}

EnvAssignments apply_nccl_environment_defaults() {
  EnvMap current;
  for (const auto& [name, value] : defaults())
    if (const char* v = std::getenv(name.c_str())) current[name] = v;
  const EnvAssignments out = nccl_environment_defaults(current);
  for (const auto& [name, value] : out) setenv(name.c_str(), value.c_str(), /*overwrite=*/0);
  return out;
}

}  // namespace flashtrain::distributed

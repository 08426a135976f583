// What the tuner needs to know about a GPU, and the published properties of
// the GPUs we test on (fixtures, so the hardware model runs on machines
// without a GPU). query_cuda_device() (device_query.h) reads a live device.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace flashrnn::tune {

struct DeviceProps {
  std::string name;            // as the CUDA runtime reports it
  int compute_major = 0;       // compute capability
  int compute_minor = 0;
  int sm_count = 0;
  int regs_per_sm = 0;         // 32-bit registers
  int regs_per_block = 0;
  int regs_per_thread = 0;     // the most one thread can address
  int64_t smem_per_sm = 0;     // shared memory bytes
  int64_t smem_per_block = 0;  // without opt-in
  int64_t smem_per_block_optin = 0;  // with cudaFuncAttributeMaxDynamicSharedMemorySize
  int max_threads_per_block = 0;
  int max_threads_per_sm = 0;
  int max_cluster_size = 1;    // portable thread-block cluster size; 1 without clusters
  int max_cluster_size_nonportable = 1;  // with cudaFuncAttributeNonPortableClusterSizeAllowed
  int64_t l2_bytes = 0;
  int clock_mhz = 0;           // peak SM clock

  bool has_clusters() const { return max_cluster_size > 1; }
};

// "a100", "h100", "h200", "l4".
std::vector<std::string> device_fixture_names();
// Case-insensitive; throws ProblemError listing the known names.
DeviceProps device_fixture(std::string_view key);
// Throws ProblemError naming the first field that is missing or impossible.
void validate(const DeviceProps& device);
// One field per line, for tools.
std::string describe(const DeviceProps& device);

}  // namespace flashrnn::tune

#include "flashrnn/tune/device_query.h"

#include <string>

#include "flashrnn/tune/errors.h"

#include <cuda_runtime_api.h>

namespace flashrnn::tune {
namespace {

[[noreturn]] void fail(const std::string& what, cudaError_t error) {
  cudaGetLastError();  // clear it, so later CUDA calls do not report it again
  throw DeviceQueryError(what + ": " + cudaGetErrorName(error) + " (" +
                         cudaGetErrorString(error) + ")");
}

int attribute(cudaDeviceAttr attr, int ordinal, const char* name) {
  int value = 0;
  if (cudaError_t e = cudaDeviceGetAttribute(&value, attr, ordinal); e != cudaSuccess)
    fail(std::string("cannot read ") + name + " of CUDA device " + std::to_string(ordinal), e);
  return value;
}

}  // namespace

DeviceProps query_cuda_device(int ordinal) {
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    // Without any NVIDIA driver the runtime reports an "insufficient" one: on
    // a machine with no GPU that reads as if upgrading the driver would help.
    if (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice)
      fail("no CUDA GPU here (no NVIDIA driver, or one older than this CUDA runtime)", e);
    fail("no usable CUDA device (cudaGetDeviceCount failed)", e);
  }
  if (count == 0) throw DeviceQueryError("no CUDA device: cudaGetDeviceCount found none");
  if (ordinal < 0 || ordinal >= count)
    throw DeviceQueryError("CUDA device " + std::to_string(ordinal) + " does not exist; " +
                           std::to_string(count) + " device(s) found");

  cudaDeviceProp prop{};
  if (cudaError_t e = cudaGetDeviceProperties(&prop, ordinal); e != cudaSuccess)
    fail("cannot read the properties of CUDA device " + std::to_string(ordinal), e);

  DeviceProps d;
  d.name = prop.name;
  d.compute_major = attribute(cudaDevAttrComputeCapabilityMajor, ordinal, "the compute capability");
  d.compute_minor = attribute(cudaDevAttrComputeCapabilityMinor, ordinal, "the compute capability");
  d.sm_count = attribute(cudaDevAttrMultiProcessorCount, ordinal, "the SM count");
  d.regs_per_sm = attribute(cudaDevAttrMaxRegistersPerMultiprocessor, ordinal, "registers per SM");
  d.regs_per_block = attribute(cudaDevAttrMaxRegistersPerBlock, ordinal, "registers per block");
  // Not a device attribute: every architecture since compute capability 3.5
  // lets a thread address 255 registers.
  d.regs_per_thread = 255;
  d.smem_per_sm =
      attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor, ordinal, "shared memory per SM");
  d.smem_per_block =
      attribute(cudaDevAttrMaxSharedMemoryPerBlock, ordinal, "shared memory per block");
  d.smem_per_block_optin =
      attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin, ordinal, "opt-in shared memory");
  d.max_threads_per_block =
      attribute(cudaDevAttrMaxThreadsPerBlock, ordinal, "threads per block");
  d.max_threads_per_sm =
      attribute(cudaDevAttrMaxThreadsPerMultiProcessor, ordinal, "threads per SM");
  // The runtime tells whether clusters exist, not how large: 8 is the portable
  // size, 16 the opt-in maximum on sm_90 (CUDA Programming Guide, clusters).
  if (attribute(cudaDevAttrClusterLaunch, ordinal, "cluster support")) {
    d.max_cluster_size = 8;
    d.max_cluster_size_nonportable = 16;
  }
  d.l2_bytes = attribute(cudaDevAttrL2CacheSize, ordinal, "the L2 size");
  d.clock_mhz = attribute(cudaDevAttrClockRate, ordinal, "the clock rate") / 1000;
  return d;
}

DeviceProps device_by_name(std::string_view name) {
  if (name != "cuda" && name.substr(0, 5) != "cuda:") return device_fixture(name);
  if (name == "cuda") return query_cuda_device(0);
  const std::string ordinal(name.substr(5));
  try {
    size_t used = 0;
    const int value = std::stoi(ordinal, &used);
    if (used == ordinal.size() && value >= 0) return query_cuda_device(value);
  } catch (const std::logic_error&) {  // stoi: invalid_argument, out_of_range
  }
  throw ProblemError("device '" + std::string(name) + "': the ordinal after 'cuda:' must be an integer >= 0");
}

}  // namespace flashrnn::tune

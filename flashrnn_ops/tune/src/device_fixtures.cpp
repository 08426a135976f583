// Properties of the GPUs we test on. Sources: NVIDIA's CUDA C++ Programming
// Guide ("Technical Specifications per Compute Capability": registers, shared
// memory, threads, cluster sizes) and the product datasheets (SM counts, L2,
// boost clocks): A100 SXM4 80GB, H100 SXM5 80GB, H200 SXM 141GB, L4.
// Names are what cudaGetDeviceProperties reports for those boards. The H100
// and H200 fixtures equal what query_cuda_device() read on those boards
// (tests/tune/test_device_props.cpp compares them wherever a GPU is present).
#include <algorithm>
#include <cctype>
#include <sstream>

#include "flashrnn/tune/device_props.h"
#include "flashrnn/tune/errors.h"

namespace flashrnn::tune {
namespace {

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;

DeviceProps a100() {
  DeviceProps d;
  d.name = "NVIDIA A100-SXM4-80GB";
  d.compute_major = 8, d.compute_minor = 0;
  d.sm_count = 108;
  d.regs_per_sm = 65536, d.regs_per_block = 65536, d.regs_per_thread = 255;
  d.smem_per_sm = 164 * kKiB, d.smem_per_block = 48 * kKiB, d.smem_per_block_optin = 163 * kKiB;
  d.max_threads_per_block = 1024, d.max_threads_per_sm = 2048;
  d.max_cluster_size = 1, d.max_cluster_size_nonportable = 1;  // clusters arrived with sm_90
  d.l2_bytes = 40 * kMiB;
  d.clock_mhz = 1410;
  return d;
}

DeviceProps h100() {
  DeviceProps d;
  d.name = "NVIDIA H100 80GB HBM3";
  d.compute_major = 9, d.compute_minor = 0;
  d.sm_count = 132;
  d.regs_per_sm = 65536, d.regs_per_block = 65536, d.regs_per_thread = 255;
  d.smem_per_sm = 228 * kKiB, d.smem_per_block = 48 * kKiB, d.smem_per_block_optin = 227 * kKiB;
  d.max_threads_per_block = 1024, d.max_threads_per_sm = 2048;
  d.max_cluster_size = 8, d.max_cluster_size_nonportable = 16;
  d.l2_bytes = 50 * kMiB;
  d.clock_mhz = 1980;
  return d;
}

DeviceProps h200() {
  DeviceProps d = h100();  // the same GH100 SM configuration; more HBM and L2
  d.name = "NVIDIA H200";
  d.l2_bytes = 60 * kMiB;  // the full chip's L2, as the runtime reports it
  return d;
}

DeviceProps l4() {
  DeviceProps d;
  d.name = "NVIDIA L4";
  d.compute_major = 8, d.compute_minor = 9;
  d.sm_count = 58;
  d.regs_per_sm = 65536, d.regs_per_block = 65536, d.regs_per_thread = 255;
  d.smem_per_sm = 100 * kKiB, d.smem_per_block = 48 * kKiB, d.smem_per_block_optin = 99 * kKiB;
  d.max_threads_per_block = 1024, d.max_threads_per_sm = 1536;
  d.max_cluster_size = 1, d.max_cluster_size_nonportable = 1;
  d.l2_bytes = 48 * kMiB;
  d.clock_mhz = 2040;
  return d;
}

struct Fixture {
  const char* key;
  DeviceProps (*make)();
};
constexpr Fixture kFixtures[] = {{"a100", a100}, {"h100", h100}, {"h200", h200}, {"l4", l4}};

}  // namespace

std::vector<std::string> device_fixture_names() {
  std::vector<std::string> names;
  for (const Fixture& f : kFixtures) names.push_back(f.key);
  return names;
}

DeviceProps device_fixture(std::string_view key) {
  std::string lower(key);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  for (const Fixture& f : kFixtures)
    if (lower == f.key) return f.make();
  std::string known;
  for (const Fixture& f : kFixtures) known += (known.empty() ? "" : ", ") + std::string(f.key);
  throw ProblemError("unknown device fixture '" + std::string(key) + "'; known: " + known);
}

void validate(const DeviceProps& d) {
  auto require = [&](bool ok, const char* field, int64_t value, const char* rule) {
    if (!ok)
      throw ProblemError("device '" + d.name + "': " + field + " = " + std::to_string(value) +
                         " " + rule);
  };
  require(!d.name.empty(), "name length", 0, "(a device needs a name)");
  require(d.compute_major >= 1, "compute_major", d.compute_major, "must be at least 1");
  require(d.sm_count >= 1, "sm_count", d.sm_count, "must be at least 1");
  require(d.regs_per_sm >= 1, "regs_per_sm", d.regs_per_sm, "must be at least 1");
  require(d.regs_per_block >= 1 && d.regs_per_block <= d.regs_per_sm, "regs_per_block",
          d.regs_per_block, "must be in 1..regs_per_sm");
  require(d.regs_per_thread >= 1, "regs_per_thread", d.regs_per_thread, "must be at least 1");
  require(d.smem_per_block >= 0, "smem_per_block", d.smem_per_block, "must not be negative");
  require(d.smem_per_block_optin >= d.smem_per_block, "smem_per_block_optin",
          d.smem_per_block_optin, "must be at least smem_per_block");
  require(d.smem_per_sm >= d.smem_per_block_optin, "smem_per_sm", d.smem_per_sm,
          "must be at least smem_per_block_optin");
  require(d.max_threads_per_block >= 32, "max_threads_per_block", d.max_threads_per_block,
          "must be at least one warp (32)");
  require(d.max_threads_per_sm >= d.max_threads_per_block, "max_threads_per_sm",
          d.max_threads_per_sm, "must be at least max_threads_per_block");
  require(d.max_cluster_size >= 1, "max_cluster_size", d.max_cluster_size, "must be at least 1");
  require(d.max_cluster_size_nonportable >= d.max_cluster_size, "max_cluster_size_nonportable",
          d.max_cluster_size_nonportable, "must be at least max_cluster_size");
  require(d.clock_mhz >= 1, "clock_mhz", d.clock_mhz, "must be at least 1");
}

std::string describe(const DeviceProps& d) {
  std::ostringstream s;
  s << "name                          " << d.name << "\n"
    << "compute capability            " << d.compute_major << "." << d.compute_minor << "\n"
    << "SMs                           " << d.sm_count << "\n"
    << "registers per SM / block      " << d.regs_per_sm << " / " << d.regs_per_block << "\n"
    << "registers per thread (max)    " << d.regs_per_thread << "\n"
    << "shared memory per SM          " << d.smem_per_sm << " B\n"
    << "shared memory per block       " << d.smem_per_block << " B (opt-in "
    << d.smem_per_block_optin << " B)\n"
    << "threads per block / SM        " << d.max_threads_per_block << " / "
    << d.max_threads_per_sm << "\n"
    << "cluster size (portable / max) " << d.max_cluster_size << " / "
    << d.max_cluster_size_nonportable << "\n"
    << "L2                            " << d.l2_bytes << " B\n"
    << "clock                         " << d.clock_mhz << " MHz\n";
  return s.str();
}

}  // namespace flashrnn::tune

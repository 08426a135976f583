#include "flashtrain/trainer/run/peak_flops.h"

namespace flashtrain::trainer {
namespace {

struct PeakEntry {
  std::string_view name_part;  // matched as a substring, first match wins
  double bf16;
  double fp32;
};

// More specific names first (the PCIe H100 is slower than the SXM one).
constexpr PeakEntry kPeaks[] = {
    {"H100 PCIe", 756.0e12, 51.0e12},
    {"H100 NVL", 835.0e12, 60.0e12},
    {"H100", 989.4e12, 66.9e12},  // SXM
    {"H200", 989.4e12, 66.9e12},
    {"H800", 989.4e12, 66.9e12},
    {"A100", 312.0e12, 19.5e12},
    {"L40S", 362.1e12, 91.6e12},
    {"L40", 181.0e12, 90.5e12},
    {"L4", 121.0e12, 30.3e12},
};

}  // namespace

std::optional<double> peak_flops_per_second(std::string_view device_name, bool bf16) {
  for (const PeakEntry& entry : kPeaks)
    if (device_name.find(entry.name_part) != std::string_view::npos) return bf16 ? entry.bf16 : entry.fp32;
  return std::nullopt;
}

}  // namespace flashtrain::trainer

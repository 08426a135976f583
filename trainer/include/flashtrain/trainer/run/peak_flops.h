// Peak dense matmul throughput of the GPUs we train on, for MFU (model FLOP
// utilisation = achieved model FLOP/s / peak). Vendor datasheet numbers,
// without sparsity; fp32 means plain fp32 (torch leaves TF32 matmuls off).
#pragma once

#include <optional>
#include <string_view>

namespace flashtrain::trainer {

// FLOP/s of the device named `device_name` (as CUDA reports it, e.g.
// "NVIDIA H100 80GB HBM3") in bf16 (`bf16`) or fp32; nullopt for devices
// not in the table.
std::optional<double> peak_flops_per_second(std::string_view device_name, bool bf16);

}  // namespace flashtrain::trainer

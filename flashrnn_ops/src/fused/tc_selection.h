// Whether the tensor-core fused kernels run a case on a device: the tuner's
// model of their tiling (flashrnn_ops/tune/models/tc_tiling.txt) checked against
// the live device's properties. Computed once per (device, cell, storage type,
// head dim) and kept; thread-safe.
#pragma once

#include <cstdint>

#include "flashrnn/flashrnn.h"
#include "flashrnn/tune/tc_select.h"

namespace flashrnn::fused {

enum class TcStorage { kBf16, kFp16, kFp32 };

// The tuner's name for a cell.
tune::Cell tuner_cell(Cell cell);

// The tuner's selection for head dim `head_dim` of `cell` in `storage` on CUDA
// device `device_index`. The reference stays valid for the life of the process.
// Throws tune::DeviceQueryError when the device cannot be read.
const tune::TcSelection& tc_selection(int device_index, Cell cell, TcStorage storage,
                                      int64_t head_dim);

}  // namespace flashrnn::fused

// The scan kernels' inputs as plain structs: pointers, sizes and flags. No torch
// and no CUDA headers: the ATen wrapper (scan_cuda_dispatch.cpp) fills them and
// the launchers (scan_launch.h) take them.
//
// Tensors are dense: [B, D, T] or [B, T, D] for the sequences, [B, D] for x0,
// last, dlast and dx0, all in the one storage dtype.
#pragma once

#include <cstdint>

namespace flashrnn::scan_kernels {

enum class ScanDtype { kFloat32, kBFloat16, kFloat16 };

constexpr int element_bytes(ScanDtype dtype) { return dtype == ScanDtype::kFloat32 ? 4 : 2; }

struct ScanShape {
  int64_t batch = 0;     // B
  int64_t channels = 0;  // D
  int64_t steps = 0;     // T
  bool btd = false;      // [B, T, D] (channels innermost); otherwise [B, D, T]
  bool reverse = false;  // the forward recurrence runs from t = T−1 down to 0
  ScanDtype dtype = ScanDtype::kFloat32;
};

struct ScanForwardParams {
  ScanShape shape;
  const void* a = nullptr;
  const void* b = nullptr;
  const void* x0 = nullptr;  // null: zeros
  void* x = nullptr;
  void* last = nullptr;
};

// The backward of the forward op described by `shape` (same shape and reverse flag).
struct ScanBackwardParams {
  ScanShape shape;
  const void* a = nullptr;      // the forward's gates
  const void* x = nullptr;      // the forward's states
  const void* x0 = nullptr;     // null: zeros
  const void* dx = nullptr;     // dL/dx; null: zeros
  const void* dlast = nullptr;  // dL/dlast; null: zeros
  void* da = nullptr;
  void* db = nullptr;
  void* dx0 = nullptr;          // null: not wanted
};

}  // namespace flashrnn::scan_kernels

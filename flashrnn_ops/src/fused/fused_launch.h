// Launchers and shape limits of the fused kernels (fused_kernels.cuh). No torch.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "pointwise.h"

namespace flashrnn::fused {

constexpr int kThreads = 256;   // per CTA
constexpr int kTileRows = 16;   // batch rows per CTA

// Shared memory of one CTA (bytes), for a cell with `gates` R slots and
// `states` states, head dim d, storage element size `elem`.
struct Layout {
  int64_t forward_smem, backward_smem;
};

inline Layout layout(int gates, int states, int64_t d, int64_t elem) {
  const int64_t r = (gates * d * d * elem + 15) / 16 * 16;
  const int64_t groups = d <= kThreads ? kThreads / d : 1;
  const int64_t f = 4;  // float
  return {r + f * kTileRows * d + f * kTileRows * gates * d,
          r + f * kTileRows * gates * d + f * groups * kTileRows * d + f * kTileRows * d +
              f * kTileRows * states * d};
}

// Why the fused kernels cannot run head dim d (empty when they can), given the
// device's opt-in shared memory per block.
inline const char* unsupported_head_dim(int gates, int states, int64_t d, int64_t elem,
                                        int64_t max_smem) {
  if (d < 16 || d % 16 != 0 || kThreads % d != 0) return "the head dimension must be 16, 32, 64, 128 or 256";
  const Layout l = layout(gates, states, d, elem);
  if (l.forward_smem > max_smem || l.backward_smem > max_smem)
    return "R of one head and the step buffers exceed the shared memory of one SM";
  return "";
}

// The tensor-core kernels (tc_forward.cuh, tc_backward.cuh) for bf16 and fp16
// storage and the head dims of tc_tiling.h, `cluster` CTAs per head (the
// tuner's choice, tc_launch.cuh).
template <class Cell, class S, int D>
cudaError_t tc_launch_forward(const ForwardStepParams<float, S>& p, const S* r_heads, int cluster,
                              cudaStream_t stream);

// `r_streamed`: scratch for a wide head's streamed Rᵀ (TcBackward::streamed_bytes_per_head() per head).
template <class Cell, class S, int D>
cudaError_t tc_launch_backward(const BackwardStepParams<float, S>& p, const S* r_heads, void* r_streamed,
                               int cluster, cudaStream_t stream);

// The first, FMA kernels (fused_kernels.cuh): every storage type, head dims 16…256.
template <class Cell, class S>
cudaError_t launch_forward(const ForwardStepParams<float, S>& p, const S* r_heads,
                           cudaStream_t stream);

template <class Cell, class S>
cudaError_t launch_backward(const BackwardStepParams<float, S>& p, const S* r_heads,
                            cudaStream_t stream);

}  // namespace flashrnn::fused

// Launchers of the tensor-core fused kernels and the macro that instantiates
// them for one storage type and head dim (fused/instances/, one file each).
#pragma once

#include "cells/all.h"
#include "fused/fused_launch.h"
#include "fused/launch_persistent.cuh"
#include "fused/tc_backward.cuh"
#include "fused/tc_forward.cuh"

namespace flashrnn::fused {

// `cluster`: the CTAs per head the tuner chose (TcConfig::cluster), one of
// the two tilings compiled per head dim (tc_tiling.h: tc_cluster_size with
// and without clusters); any other, or a head dim with no tiling, is
// cudaErrorNotSupported (the tuner never selects those: tests/tune).
// Null p.cache (with p.states and p.h_gemm) asks for the inference forward:
// only the output is written. (Not p.states: it holds no slot for a cell
// whose backward reads no state, Elman's.)
template <class Cell, class S, int D>
cudaError_t tc_launch_forward(const ForwardStepParams<float, S>& p, const S* r_heads, int cluster,
                              cudaStream_t stream) {
  const auto launch = [&](auto c) -> cudaError_t {
    constexpr int C = decltype(c)::value;
    using K = TcForward<Cell, S, D, C>;
    const bool resets = p.reset.ptr != nullptr, saves = p.cache.ptr != nullptr;
    const auto kernel = resets ? (saves ? tc_forward_kernel<Cell, S, D, C, true, true>
                                        : tc_forward_kernel<Cell, S, D, C, true, false>)
                               : (saves ? tc_forward_kernel<Cell, S, D, C, false, true>
                                        : tc_forward_kernel<Cell, S, D, C, false, false>);
    return launch_persistent(kernel, K::Tiling::kThreads, kTcRows, K::smem_bytes(saves), stream, C, p, r_heads);
  };
  return with_tc_cluster<Cell, D>(cluster, launch, cudaErrorNotSupported);
}

// `r_streamed`: TcBackward::streamed_bytes_per_head() per head of device
// memory, for a wide head whose Rᵀ is streamed (kStreams: packed here first),
// else unused.
template <class Cell, class S, int D>
cudaError_t tc_launch_backward(const BackwardStepParams<float, S>& p, const S* r_heads, void* r_streamed,
                               int cluster, cudaStream_t stream) {
  const auto launch = [&](auto c) -> cudaError_t {
    constexpr int C = decltype(c)::value;
    using K = TcBackward<Cell, S, D, C>;
    uint2* packed = static_cast<uint2*>(r_streamed);
    if constexpr (K::kStreams) {
      if (packed == nullptr) return cudaErrorInvalidValue;
      tc_pack_streamed_r_kernel<Cell, S, D, C>
          <<<dim3(unsigned(C * K::kSharedSlices), unsigned(p.extent.heads)), K::kStepThreads, 0, stream>>>(
              r_heads, packed);
      const cudaError_t status = cudaGetLastError();
      if (status != cudaSuccess) return status;
    }
    return launch_persistent(p.reset.ptr ? tc_backward_kernel<Cell, S, D, C, true>
                                         : tc_backward_kernel<Cell, S, D, C, false>,
                             K::kThreads, kTcRows, K::smem_bytes(), stream, C, p, r_heads,
                             static_cast<const uint2*>(packed));
  };
  return with_tc_cluster<Cell, D>(cluster, launch, cudaErrorNotSupported);
}

#define FLASHRNN_TC_INSTANTIATE_CELL(CELL, S, D)                                                \
  template cudaError_t tc_launch_forward<cells::CELL, S, D>(const ForwardStepParams<float, S>&, \
                                                            const S*, int, cudaStream_t);       \
  template cudaError_t tc_launch_backward<cells::CELL, S, D>(                                   \
      const BackwardStepParams<float, S>&, const S*, void*, int, cudaStream_t);

#define FLASHRNN_TC_INSTANTIATE(S, D) FLASHRNN_FOR_EACH_CELL(FLASHRNN_TC_INSTANTIATE_CELL, S, D)

}  // namespace flashrnn::fused

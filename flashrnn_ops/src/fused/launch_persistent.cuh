// The one way every fused kernel is launched: a CTA per (tile of `rows` batch
// rows, head), `threads` threads, `smem` bytes of dynamic shared memory (over
// 48 KB only after raising the kernel's limit, which this does).
#pragma once

#include <cuda_runtime_api.h>

namespace flashrnn::fused {

template <class Params, class S>
cudaError_t launch_persistent(void (*kernel)(Params, const S*), int threads, int rows,
                              int64_t smem, const Params& p, const S* r_heads,
                              cudaStream_t stream) {
  const cudaError_t status =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
  if (status != cudaSuccess) return status;
  const dim3 grid(unsigned((p.extent.batch + rows - 1) / rows), unsigned(p.extent.heads));
  kernel<<<grid, threads, smem, stream>>>(p, r_heads);
  return cudaGetLastError();
}

}  // namespace flashrnn::fused

// The one way every fused kernel is launched: a CTA per (tile of `rows` batch
// rows, head), or a cluster of `cluster` CTAs per (tile, head) laid out along
// the grid's x, `threads` threads, `smem` bytes of dynamic shared memory (over
// 48 KB only after raising the kernel's limit, which this does, as it opts in
// to clusters over 8 CTAs); the kernel takes the step parameters `p` (whose
// extent sizes the grid) and then `args`.
#pragma once

#include <cuda_runtime_api.h>

namespace flashrnn::fused {

template <class Params, class... Args, class... Given>
cudaError_t launch_persistent(void (*kernel)(Params, Args...), int threads, int rows, int64_t smem,
                              cudaStream_t stream, int cluster, const Params& p, Given... args) {
  cudaError_t status = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
  if (status != cudaSuccess) return status;
  if (cluster > 8) {  // over sm_90's portable size, up to its 16, by opting in
    status = cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    if (status != cudaSuccess) return status;
  }
  const dim3 grid(unsigned((p.extent.batch + rows - 1) / rows * cluster), unsigned(p.extent.heads));
  if (cluster == 1) {
    kernel<<<grid, threads, smem, stream>>>(p, args...);
    return cudaGetLastError();
  }
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = unsigned(cluster);
  attribute.val.clusterDim.y = attribute.val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = dim3(unsigned(threads));
  config.dynamicSmemBytes = size_t(smem);
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, kernel, p, Args(args)...);
}

}  // namespace flashrnn::fused

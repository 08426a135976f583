// Grid, workspace and kernel choice for one storage type; included by the
// per-dtype instantiation files scan_kernels_<dtype>.cu.
#pragma once

#include <atomic>
#include <climits>
#include <cstdint>
#include <initializer_list>

#include "scan/scan_launch.h"
#include "scan/tile/scan_backward_kernel.cuh"
#include "scan/tile/scan_forward_kernel.cuh"
#include "scan/tile/scan_tiling.h"
#include "scan/warp/scan_bdt_launch.cuh"

namespace flashrnn::scan_kernels {
namespace detail {

inline bool aligned16(const void* p) { return p == nullptr || uintptr_t(p) % kVectorBytes == 0; }

// Vector accesses need every sequence tensor 16-byte aligned and vectors that
// never straddle a row: T ([B, D, T]) or D ([B, T, D]) a multiple of the vector.
inline bool vectors_allowed(const ScanShape& shape, std::initializer_list<const void*> tensors) {
  const int64_t vector = vector_elements(shape.btd, element_bytes(shape.dtype));
  if ((shape.btd ? shape.channels : shape.steps) % vector != 0) return false;
  for (const void* p : tensors)
    if (!aligned16(p)) return false;
  return true;
}

// Lays the look-back out in `workspace` and clears its status words.
inline cudaError_t prepare_lookback(const ScanTiling& tiling, void* workspace, cudaStream_t stream,
                                    LookbackView& view) {
  const LookbackLayout layout = lookback_layout(tiling);
  view = LookbackView{};
  if (layout.total_bytes == 0) return cudaSuccess;
  if (workspace == nullptr) return cudaErrorInvalidValue;
  char* base = static_cast<char*>(workspace);
  view.ticket = reinterpret_cast<uint32_t*>(base + layout.ticket);
  view.flags = reinterpret_cast<uint32_t*>(base + layout.flags);
  view.aggregates = reinterpret_cast<float2*>(base + layout.aggregates);
  view.inclusive = reinterpret_cast<float*>(base + layout.inclusive);
  return cudaMemsetAsync(workspace, 0, layout.zeroed_bytes, stream);
}

inline bool grid_fits(const ScanTiling& tiling) { return tiling.tiles <= INT_MAX; }

// The persistent grid of a tile kernel (scan_resident_blocks.cuh).
template <auto kKernel>
cudaError_t resident_blocks(int shared_bytes, int& blocks) {
  return resident_blocks_of<kKernel, kThreadsPerTile, true>(shared_bytes, blocks);
}

// Launches kKernel on a persistent grid: no more blocks than tiles or than fit.
template <auto kKernel, class Args>
cudaError_t launch_persistent(const Args& args, int shared_bytes, cudaStream_t stream) {
  int resident = 0;
  if (const cudaError_t e = resident_blocks<kKernel>(shared_bytes, resident)) return e;
  const unsigned blocks = unsigned(args.tiling.tiles < resident ? args.tiling.tiles : resident);
  kKernel<<<blocks, kThreadsPerTile, shared_bytes, stream>>>(args);
  return cudaGetLastError();
}

}  // namespace detail

template <class T>
cudaError_t launch_scan_forward_typed(const ScanForwardParams& p, void* workspace,
                                      cudaStream_t stream) {
  BdtPlan plan;
  if (scan_bdt_warp_plan(p.shape, plan))
    return launch_bdt_forward<T>(p, plan, detail::vectors_allowed(p.shape, {p.a, p.b, p.x}),
                                 workspace, stream);
  ForwardArgs<T> args;
  args.shape = p.shape;
  args.tiling = make_tiling(p.shape);
  if (!detail::grid_fits(args.tiling)) return cudaErrorInvalidConfiguration;
  args.vectors = detail::vectors_allowed(p.shape, {p.a, p.b, p.x});
  args.a = static_cast<const T*>(p.a);
  args.b = static_cast<const T*>(p.b);
  args.x0 = static_cast<const T*>(p.x0);
  args.x = static_cast<T*>(p.x);
  args.last = static_cast<T*>(p.last);
  if (const cudaError_t e = detail::prepare_lookback(args.tiling, workspace, stream, args.lookback))
    return e;
  return p.shape.btd ? detail::launch_persistent<scan_forward_kernel<T, true>>(
                         args, forward_staging_bytes<T, true>(), stream)
                     : detail::launch_persistent<scan_forward_kernel<T, false>>(
                         args, forward_staging_bytes<T, false>(), stream);
}

template <class T>
cudaError_t launch_scan_backward_typed(const ScanBackwardParams& p, void* workspace,
                                       cudaStream_t stream) {
  BdtPlan plan;
  if (scan_bdt_warp_plan(p.shape, plan))
    return launch_bdt_backward<T>(
        p, plan, detail::vectors_allowed(p.shape, {p.a, p.x, p.dx, p.da, p.db}), workspace, stream);
  BackwardArgs<T> args;
  args.shape = p.shape;
  args.tiling = make_tiling(p.shape);
  if (!detail::grid_fits(args.tiling)) return cudaErrorInvalidConfiguration;
  args.vectors = detail::vectors_allowed(p.shape, {p.a, p.x, p.dx, p.da, p.db});
  args.a = static_cast<const T*>(p.a);
  args.x = static_cast<const T*>(p.x);
  args.x0 = static_cast<const T*>(p.x0);
  args.dx = static_cast<const T*>(p.dx);
  args.dlast = static_cast<const T*>(p.dlast);
  args.da = static_cast<T*>(p.da);
  args.db = static_cast<T*>(p.db);
  args.dx0 = static_cast<T*>(p.dx0);
  if (const cudaError_t e = detail::prepare_lookback(args.tiling, workspace, stream, args.lookback))
    return e;
  return p.shape.btd ? detail::launch_persistent<scan_backward_kernel<T, true>>(
                         args, backward_staging_bytes<T, true>(), stream)
                     : detail::launch_persistent<scan_backward_kernel<T, false>>(
                         args, backward_staging_bytes<T, false>(), stream);
}

template <class T>
cudaError_t scan_resident_blocks_typed(const ScanShape& shape, bool backward, int& blocks) {
  BdtPlan plan;
  if (scan_bdt_warp_plan(shape, plan)) return bdt_grid_blocks<T>(plan, backward, blocks);
  if (backward)
    return shape.btd ? detail::resident_blocks<scan_backward_kernel<T, true>>(
                           backward_staging_bytes<T, true>(), blocks)
                     : detail::resident_blocks<scan_backward_kernel<T, false>>(
                           backward_staging_bytes<T, false>(), blocks);
  return shape.btd ? detail::resident_blocks<scan_forward_kernel<T, true>>(
                         forward_staging_bytes<T, true>(), blocks)
                   : detail::resident_blocks<scan_forward_kernel<T, false>>(
                         forward_staging_bytes<T, false>(), blocks);
}

}  // namespace flashrnn::scan_kernels

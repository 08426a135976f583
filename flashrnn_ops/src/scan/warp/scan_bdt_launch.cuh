// Grids, workspace and kernel choice of the [B, D, T] warp kernels for one
// storage type; included by scan_launch_typed.cuh.
#pragma once

#include <atomic>
#include <climits>
#include <cstdint>
#include <type_traits>

#include "scan/scan_launch.h"
#include "scan/scan_resident_blocks.cuh"
#include "scan/warp/scan_bdt_backward_kernel.cuh"
#include "scan/warp/scan_bdt_forward_kernel.cuh"
#include "scan/warp/scan_bdt_plan.h"

namespace flashrnn::scan_kernels {
namespace bdt_detail {

// Lays the look-back out in `workspace` and clears it (ticket, descriptors).
inline cudaError_t prepare_lookback(const BdtPlan& plan, void* workspace, cudaStream_t stream,
                                    WarpLookback& view) {
  const BdtLookbackLayout layout = bdt_lookback_layout(plan);
  view = WarpLookback{};
  if (layout.total_bytes == 0) return cudaSuccess;
  if (workspace == nullptr) return cudaErrorInvalidValue;
  char* base = static_cast<char*>(workspace);
  view.ticket = reinterpret_cast<uint32_t*>(base + layout.ticket);
  view.descriptors = reinterpret_cast<uint4*>(base + layout.descriptors);
  return cudaMemsetAsync(workspace, 0, layout.total_bytes, stream);
}

// The persistent grid of a lookback kernel of kWarps-warp blocks (scan_resident_blocks.cuh).
template <auto kKernel, int kWarps>
cudaError_t resident_blocks(int shared_bytes, int& blocks) {
  return resident_blocks_of<kKernel, 32 * kWarps, false>(shared_bytes, blocks);
}

// The plan's cap on resident blocks per SM (blocks_per_sm, 0: none) applied to `resident`.
inline cudaError_t cap_blocks(const BdtPlan& plan, int& resident) {
  if (plan.blocks_per_sm <= 0) return cudaSuccess;
  int device = 0, sms = 0;
  if (const cudaError_t e = cudaGetDevice(&device)) return e;
  if (const cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device))
    return e;
  if (plan.blocks_per_sm * sms < resident) resident = plan.blocks_per_sm * sms;
  return cudaSuccess;
}

// march: one warp per row, kBdtWarpsPerBlock per block. lookback: a
// persistent grid of kLookbackWarps-warp blocks, no more blocks than items,
// with `lookback_shared` bytes of dynamic shared memory per block.
template <auto kMarch, auto kLookback, int kLookbackWarps, class Args>
cudaError_t launch(const Args& args, int lookback_shared, cudaStream_t stream) {
  const BdtPlan& plan = args.plan;
  int64_t blocks = (plan.rows + kBdtWarpsPerBlock - 1) / kBdtWarpsPerBlock;
  if (plan.mode == BdtMode::kLookback) {
    int resident = 0;
    if (const cudaError_t e = resident_blocks<kLookback, kLookbackWarps>(lookback_shared, resident))
      return e;
    if (const cudaError_t e = cap_blocks(plan, resident)) return e;
    blocks = plan.items < resident ? plan.items : resident;  // a block per item at most
  }
  if (blocks < 1 || blocks > INT_MAX) return cudaErrorInvalidConfiguration;
  if (plan.mode == BdtMode::kLookback)
    kLookback<<<unsigned(blocks), 32 * kLookbackWarps, lookback_shared, stream>>>(args);
  else
    kMarch<<<unsigned(blocks), kBdtThreadsPerBlock, 0, stream>>>(args);
  return cudaGetLastError();
}

// Tickets are 32-bit: every item and one extra claim per warp must fit.
inline bool plan_fits(const BdtPlan& plan) { return plan.items < (int64_t(1) << 31); }

}  // namespace bdt_detail

namespace bdt_detail {

// The march and lookback kernels of one direction (by the arguments' type),
// scan order, access path, depth and item length.
template <class T, bool kDesc, bool kVectors, int kDepth, int kIters>
cudaError_t launch_sized(const BdtForwardArgs<T>& args, cudaStream_t stream) {
  return launch<scan_bdt_forward_march<T, kDesc, kVectors, kDepth>,
                scan_bdt_forward_lookback<T, kDesc, kVectors, kIters>, kBdtLookbackWarps>(
      args, forward_lookback_shared_bytes<kIters>(), stream);
}

template <class T, bool kDesc, bool kVectors, int kDepth, int kIters>
cudaError_t launch_sized(const BdtBackwardArgs<T>& args, cudaStream_t stream) {
  return launch<scan_bdt_backward_march<T, kDesc, kVectors, kDepth>,
                scan_bdt_backward_lookback<T, kDesc, kVectors, kIters>, kBdtLookbackWarps>(
      args, backward_lookback_shared_bytes<kIters>(), stream);
}

// Calls f(std::integral_constant<int, K>{}) for the plan's item length K (the
// lookback kernels are compiled for 8 and 16 iterations per item). The
// item length must be the plan's: it sized the workspace and cuts the rows
// (before, the scalar path always ran items of 2 iterations, so under items = 4
// half of every item was never written: the NaNs of the v4 run).
template <class F>
cudaError_t with_item_iterations(const BdtPlan& plan, F&& f) {
  switch (plan.item_iterations) {
    case 8: return f(std::integral_constant<int, 8>{});
    case 16: return f(std::integral_constant<int, 16>{});
  }
  return cudaErrorInvalidConfiguration;
}

// The kernels of one direction (forward or backward arguments) and scan order,
// by depth and item length; the scalar path (no 16-byte accesses) at depth 2 only.
template <class T, bool kDesc, class Args>
cudaError_t launch_rows(const Args& args, bool vectors, cudaStream_t stream) {
  const bool deep = args.plan.depth >= 4;
  return with_item_iterations(args.plan, [&](auto iters) {
    constexpr int kIters = decltype(iters)::value;
    if (!vectors) return launch_sized<T, kDesc, false, 2, kIters>(args, stream);
    return deep ? launch_sized<T, kDesc, true, 4, kIters>(args, stream)
                : launch_sized<T, kDesc, true, 2, kIters>(args, stream);
  });
}

}  // namespace bdt_detail

template <class T>
cudaError_t launch_bdt_forward(const ScanForwardParams& p, const BdtPlan& plan, bool vectors,
                               void* workspace, cudaStream_t stream) {
  if (plan.items == 0) return cudaSuccess;
  if (!bdt_detail::plan_fits(plan)) return cudaErrorInvalidConfiguration;
  BdtForwardArgs<T> args;
  args.plan = plan;
  args.a = static_cast<const T*>(p.a);
  args.b = static_cast<const T*>(p.b);
  args.x0 = static_cast<const T*>(p.x0);
  args.x = static_cast<T*>(p.x);
  args.last = static_cast<T*>(p.last);
  if (const cudaError_t e = bdt_detail::prepare_lookback(plan, workspace, stream, args.lookback))
    return e;
  return p.shape.reverse ? bdt_detail::launch_rows<T, true>(args, vectors, stream)
                         : bdt_detail::launch_rows<T, false>(args, vectors, stream);
}

// The backward scans in the forward's opposite order.
template <class T>
cudaError_t launch_bdt_backward(const ScanBackwardParams& p, const BdtPlan& plan, bool vectors,
                                void* workspace, cudaStream_t stream) {
  if (plan.items == 0) return cudaSuccess;
  if (!bdt_detail::plan_fits(plan)) return cudaErrorInvalidConfiguration;
  BdtBackwardArgs<T> args;
  args.plan = plan;
  args.a = static_cast<const T*>(p.a);
  args.x = static_cast<const T*>(p.x);
  args.x0 = static_cast<const T*>(p.x0);
  args.dx = static_cast<const T*>(p.dx);
  args.dlast = static_cast<const T*>(p.dlast);
  args.da = static_cast<T*>(p.da);
  args.db = static_cast<T*>(p.db);
  args.dx0 = static_cast<T*>(p.dx0);
  if (const cudaError_t e = bdt_detail::prepare_lookback(plan, workspace, stream, args.lookback))
    return e;
  return p.shape.reverse ? bdt_detail::launch_rows<T, false>(args, vectors, stream)
                         : bdt_detail::launch_rows<T, true>(args, vectors, stream);
}

// Blocks the [B, D, T] warp kernel of this plan launches (for benchmark reports).
template <class T>
cudaError_t bdt_grid_blocks(const BdtPlan& plan, bool backward, int& blocks) {
  if (plan.mode != BdtMode::kLookback) {
    blocks = int((plan.rows + kBdtWarpsPerBlock - 1) / kBdtWarpsPerBlock);
    return cudaSuccess;
  }
  int resident = 0;
  const cudaError_t e = bdt_detail::with_item_iterations(plan, [&](auto iters) {
    constexpr int kIters = decltype(iters)::value;
    using bdt_detail::resident_blocks;
    return backward ? resident_blocks<scan_bdt_backward_lookback<T, true, true, kIters>,
                                      kBdtLookbackWarps>(
                          backward_lookback_shared_bytes<kIters>(), resident)
                    : resident_blocks<scan_bdt_forward_lookback<T, false, true, kIters>,
                                      kBdtLookbackWarps>(
                          forward_lookback_shared_bytes<kIters>(), resident);
  });
  if (e != cudaSuccess) return e;
  if (const cudaError_t c = bdt_detail::cap_blocks(plan, resident)) return c;
  blocks = int(plan.items < resident ? plan.items : resident);
  return cudaSuccess;
}

}  // namespace flashrnn::scan_kernels

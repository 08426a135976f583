// Scans of affine maps across the 32 lanes of a warp (shuffles only).
#pragma once

#include "scan/scan_math.cuh"

namespace flashrnn::scan_kernels {

constexpr unsigned kFullWarp = 0xffffffffu;

struct WarpScan {
  Affine exclusive;  // lanes before this one, composed (identity for lane 0)
  Affine total;      // all 32 lanes, composed (the same in every lane)
};

// Lane l's map composed after lanes 0..l−1's: a Kogge–Stone scan, 5 rounds.
__device__ __forceinline__ WarpScan warp_scan(Affine map, int lane) {
  Affine inclusive = map;
#pragma unroll
  for (int k = 1; k < 32; k <<= 1) {
    const Affine earlier{__shfl_up_sync(kFullWarp, inclusive.a, k),
                         __shfl_up_sync(kFullWarp, inclusive.b, k)};
    if (lane >= k) inclusive = then(earlier, inclusive);
  }
  WarpScan s;
  s.exclusive = Affine{__shfl_up_sync(kFullWarp, inclusive.a, 1),
                       __shfl_up_sync(kFullWarp, inclusive.b, 1)};
  if (lane == 0) s.exclusive = identity_map();
  s.total = Affine{__shfl_sync(kFullWarp, inclusive.a, 31), __shfl_sync(kFullWarp, inclusive.b, 31)};
  return s;
}

// The maps of lanes 0..31 where a higher lane is earlier in time (lane 31 is
// applied first): their composition, valid in lane 0.
__device__ __forceinline__ Affine warp_compose_older_above(Affine map, int lane) {
#pragma unroll
  for (int k = 1; k < 32; k <<= 1) {
    const Affine older{__shfl_down_sync(kFullWarp, map.a, k),
                       __shfl_down_sync(kFullWarp, map.b, k)};
    if (lane + k < 32) map = then(older, map);
  }
  return map;
}

}  // namespace flashrnn::scan_kernels

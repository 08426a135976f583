// Device-side arithmetic of the scan: the affine maps that steps compose into,
// and conversions between the storage dtypes and float32.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace flashrnn::scan_kernels {

// The map x ↦ a·x + b: one step of the recurrence, or several composed.
struct Affine {
  float a;
  float b;
};

__device__ __forceinline__ Affine identity_map() { return {1.f, 0.f}; }

// `first` then `second`: x ↦ second.a·(first.a·x + first.b) + second.b.
__device__ __forceinline__ Affine then(Affine first, Affine second) {
  return {second.a * first.a, fmaf(second.a, first.b, second.b)};
}

__device__ __forceinline__ float apply(Affine f, float x) { return fmaf(f.a, x, f.b); }

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }

template <class T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }

}  // namespace flashrnn::scan_kernels

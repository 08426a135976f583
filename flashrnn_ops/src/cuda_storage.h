// What the CUDA backends share at the ATen level: the storage types they take
// (bf16, fp16, fp32 with fp32 compute) and error checks of their launches.
#pragma once

#include <ATen/Tensor.h>
#include <c10/util/Exception.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

namespace flashrnn {

// Calls fn(S{}) with the CUDA storage type of `type`.
template <class Fn>
decltype(auto) dispatch_storage(at::ScalarType type, Fn&& fn) {
  switch (type) {
    case at::kBFloat16: return fn(__nv_bfloat16{});
    case at::kHalf: return fn(__half{});
    case at::kFloat: return fn(float{});
    default: break;
  }
  TORCH_CHECK(false, "flashrnn: no CUDA storage type for dtype ", type);
}

inline bool is_cuda_storage_type(at::ScalarType type) {
  return type == at::kBFloat16 || type == at::kHalf || type == at::kFloat;
}

// Throws naming the backend and the launch when a CUDA call failed.
inline void check_launch(cudaError_t status, const char* backend, const char* what) {
  TORCH_CHECK(status == cudaSuccess, "flashrnn ", backend, ": ", what, " failed: ",
              cudaGetErrorString(status));
}

}  // namespace flashrnn

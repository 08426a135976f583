#include "alternating/recurrent_gemm.h"

#include <ATen/cuda/Exceptions.h>

namespace flashrnn::alternating {
namespace {

int as_int(int64_t v) {
  TORCH_CHECK(v <= INT32_MAX, "flashrnn alternating: GEMM dimension ", v, " exceeds int32");
  return static_cast<int>(v);
}

}  // namespace

// cuBLAS is column-major: a row-major [rows, cols] matrix is its column-major transpose.
void recurrent_gemm(cublasHandle_t handle, cudaDataType storage, const GemmPointers& p, int64_t t,
                    const GemmShape& s) {
  const float one = 1.0f, zero = 0.0f;
  const int gd = as_int(s.gates * s.head_dim), d = as_int(s.head_dim);
  // C^T [Gx·D × B] = (R as col-major [D × Gx·D])^T · (h as col-major [D × B], ld N·D)
  TORCH_CUDABLAS_CHECK(cublasGemmBatchedEx(
      handle, CUBLAS_OP_T, CUBLAS_OP_N, gd, as_int(s.batch), d, &one, p.a, storage, d,
      p.b + t * s.heads, storage, as_int(s.heads * s.head_dim), &zero, p.c, CUDA_R_32F, gd,
      as_int(s.heads), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void transposed_recurrent_gemm(cublasHandle_t handle, cudaDataType storage, const GemmPointers& p,
                               int64_t t, const GemmShape& s) {
  const float one = 1.0f, zero = 0.0f;
  const int gd = as_int(s.gates * s.head_dim), d = as_int(s.head_dim);
  const int64_t entries = s.heads * s.gates;
  // C^T [D × B] = (R[k, n] as col-major [D × D]) · (δ_k as col-major [D × B], ld Gx·D)
  TORCH_CUDABLAS_CHECK(cublasGemmBatchedEx(
      handle, CUBLAS_OP_N, CUBLAS_OP_N, d, as_int(s.batch), d, &one, p.a, storage, d,
      p.b + t * entries, storage, gd, &zero, p.c, CUDA_R_32F, d, as_int(entries),
      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace flashrnn::alternating

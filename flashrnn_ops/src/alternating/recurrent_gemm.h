// The per-step GEMMs of the alternating backend: cuBLAS batched over heads, with
// operand pointers read from device arrays (step_args.h) so that a captured
// graph serves any tensors. Inputs in the storage type, fp32 accumulation and
// fp32 output.
#pragma once

#include <cublas_v2.h>

#include "alternating/step_args.h"

namespace flashrnn::alternating {

struct GemmShape {
  int64_t batch, heads, gates, head_dim;
};

// rh[n] = R[n] · h_t[n] for every head: C [N][B][Gx·D] from A = R heads
// [N][Gx·D][D] and B = h_gemm[t] (rows of N·D).
void recurrent_gemm(cublasHandle_t handle, cudaDataType storage, const GemmPointers& p,
                    int64_t t, const GemmShape& s);

// dh_rec[n][k] = R[k, n]ᵀ · δ(R h)_t[n][k] for every head and gate (batched over
// N·Gx; the pointwise step sums the gates): C [N][Gx][B][D] from A = the D × D
// blocks of the R heads and B = d_rh[n][t] [B][Gx·D]. Splitting the gates keeps
// k = D: cuBLAS picked a ~60 µs kernel for the k = 4·768 shape of one head.
void transposed_recurrent_gemm(cublasHandle_t handle, cudaDataType storage, const GemmPointers& p,
                               int64_t t, const GemmShape& s);

}  // namespace flashrnn::alternating

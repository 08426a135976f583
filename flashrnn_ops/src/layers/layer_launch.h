// The launchers of the layer kernels (layer_kernels.cu); torch-free, like
// every .cu of the library. T: float, __nv_bfloat16 or __half. All tensors
// are contiguous; weights and the float outputs are float32.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace flashrnn::layers {

// The kernels take even head dims up to this (a row fits a warp's registers);
// the op runs its reference composition for the others.
constexpr int kMaxNormHeadDim = 1024;

struct HeadwiseNormShape {
  int64_t rows;  // (number of x's vectors) × heads
  int heads;
  int head_dim;
};

bool headwise_norm_kernels_take(HeadwiseNormShape shape);

// The residual form of the norm (flashrnn::residual_add_norm), or the plain
// norm where delta is null. Forward: the rows normalised are x + delta (delta
// of type Out), and that sum is stored (type T). Backward: the norm's input
// gradient plus the sum's own gradient (type T; null: none) is the total,
// written to dx and, in Out, to delta's gradient.
template <class DeltaPtr, class SumPtr>
struct NormResidual {
  DeltaPtr delta = nullptr;
  SumPtr sum = nullptr;
};

// y = (x − mean) · rstd · weight per row of head_dim values, x of type T and
// y of type Out (T, or bf16 / fp16 for a float32 T); mean and rstd [rows] are
// kept for the backward.
template <class T, class Out>
cudaError_t launch_headwise_norm_forward(const T* x, NormResidual<const Out*, T*> residual, const float* weight,
                                         Out* y, float* mean, float* rstd, HeadwiseNormShape shape, float eps,
                                         cudaStream_t stream);

// dx (type T) from dy (type Out), x being what the forward normalised (its
// stored sum in the residual form), and the weight's gradient in one pass:
// d_weight_partial [chunks, heads · head_dim] receives partial sums of dy · x̂
// (the caller sums the chunks; headwise_norm_weight_chunks says how many, for
// the current device).
template <class T, class Out>
cudaError_t launch_headwise_norm_backward(const T* x, const Out* dy, const float* weight, const float* mean,
                                          const float* rstd, NormResidual<Out*, const T*> residual, T* dx,
                                          float* d_weight_partial, HeadwiseNormShape shape, int chunks,
                                          cudaStream_t stream);
template <class T, class Out>
int headwise_norm_weight_chunks(HeadwiseNormShape shape, bool residual);

// The kernels take an even number of channels (a thread owns a pair),
// kernel sizes up to this (the taps live in registers) and up to 65535 tiles
// of 64 steps over the batch (the grid's y); the op runs its reference
// composition for the others.
constexpr int kMaxCausalConvKernel = 8;

struct CausalConvShape {
  int64_t batch;
  int64_t steps;
  int channels;
  int kernel;  // ≤ kMaxCausalConvKernel
};

bool causal_conv_kernels_take(CausalConvShape shape);

template <class T>
cudaError_t launch_causal_conv_silu_forward(const T* x, const float* weight, const float* bias, T* y,
                                            CausalConvShape shape, cudaStream_t stream);

// dx from dy (the pre-activations are recomputed from x); d_param_partial
// [chunks, kernel + 1, channels] (chunks = causal_conv_param_chunks) receives
// per-chunk sums for the weight taps (rows 0..kernel−1) and the bias (row kernel).
template <class T>
cudaError_t launch_causal_conv_silu_backward(const T* x, const T* dy, const float* weight, const float* bias,
                                             T* dx, float* d_param_partial, CausalConvShape shape, int chunks,
                                             cudaStream_t stream);
int causal_conv_param_chunks(CausalConvShape shape);

// y = silu(gate) · up over `pairs` pairs of values (an even count; the op
// runs its reference composition for an odd one).
template <class T>
cudaError_t launch_silu_mul_forward(const T* gate, const T* up, T* y, int64_t pairs, cudaStream_t stream);

// d_gate and d_up from dy (silu(gate) is recomputed).
template <class T>
cudaError_t launch_silu_mul_backward(const T* gate, const T* up, const T* dy, T* d_gate, T* d_up, int64_t pairs,
                                     cudaStream_t stream);

}  // namespace flashrnn::layers

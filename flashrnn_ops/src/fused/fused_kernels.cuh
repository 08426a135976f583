// The fused backend's persistent kernels: one CTA per (head, tile of 16 batch
// rows) runs all T steps. R of its head stays in shared memory, h_{t-1} (or
// δ(R h)_{t+1} backwards) stays on chip between steps, and the pointwise work is
// pointwise.h's, reading and writing those on-chip buffers through Slots.
//
// First version: the recurrent matmul is fp32 FMA from shared memory (no tensor
// cores yet); head dims 16, 32, 64, 128, 256 whose R and step buffers fit the
// shared memory of one SM (fused_launch.h says which cases fit).
#pragma once

#include "fused/fused_launch.h"
#include "fused/launch_persistent.cuh"
#include "pointwise.h"

namespace flashrnn::fused {

template <class S> __device__ __forceinline__ float to_float(S v) { return static_cast<float>(v); }

__device__ __forceinline__ int64_t align16(int64_t bytes) { return (bytes + 15) / 16 * 16; }

// rh[b][j] = Σ_k R[j][k] h[b][k] for the tile. R is stored k-quad-major,
// rq[(k/4)·GD + j][4], so a thread reads its 4 weights in one load and the h
// quads are broadcasts.
template <class S>
__device__ void tile_recurrent_matmul(const S* rq, const float* h, float* rh, int rows, int gd,
                                      int d) {
  for (int j = threadIdx.x; j < gd; j += blockDim.x) {
    float acc[kTileRows] = {};
    for (int kq = 0; kq < d / 4; ++kq) {
      const S* w = rq + (int64_t(kq) * gd + j) * 4;
      const float w0 = to_float(w[0]), w1 = to_float(w[1]), w2 = to_float(w[2]), w3 = to_float(w[3]);
#pragma unroll
      for (int b = 0; b < kTileRows; ++b) {
        if (b < rows) {
          const float4 x = *reinterpret_cast<const float4*>(h + b * d + kq * 4);
          acc[b] += w0 * x.x + w1 * x.y + w2 * x.z + w3 * x.w;
        }
      }
    }
#pragma unroll
    for (int b = 0; b < kTileRows; ++b)
      if (b < rows) rh[b * gd + j] = acc[b];
  }
}

// dh[b][k] = Σ_j R[j][k] δ[b][j]: thread (k, group) sums its share of j into
// partial[group][b][k]; the groups are then added in a fixed order.
template <class S>
__device__ void tile_transposed_matmul(const S* r, const float* delta, float* partial, float* dh,
                                       int rows, int gd, int d) {
  const int groups = blockDim.x / d;
  const int k = threadIdx.x % d, group = threadIdx.x / d;
  const int per_group = gd / groups;
  float acc[kTileRows] = {};
  for (int j = group * per_group; j < (group + 1) * per_group; ++j) {
    const float w = to_float(r[int64_t(j) * d + k]);
#pragma unroll
    for (int b = 0; b < kTileRows; ++b)
      if (b < rows) acc[b] += w * delta[b * gd + j];
  }
#pragma unroll
  for (int b = 0; b < kTileRows; ++b)
    if (b < rows) partial[(group * kTileRows + b) * d + k] = acc[b];
  __syncthreads();
  for (int i = threadIdx.x; i < rows * d; i += blockDim.x) {
    float sum = 0.f;
    for (int g = 0; g < groups; ++g) sum += partial[g * kTileRows * d + i];
    dh[i] = sum;
  }
}

template <class Cell, class S>
__global__ void __launch_bounds__(kThreads) fused_forward_kernel(ForwardStepParams<float, S> p,
                                                                 const S* r_heads) {
  const int d = int(p.extent.head_dim), gd = Cell::kGates * d;
  const int64_t n = blockIdx.y, b0 = int64_t(blockIdx.x) * kTileRows;
  const int rows = int(min(int64_t(kTileRows), p.extent.batch - b0));
  extern __shared__ __align__(16) unsigned char smem[];
  S* rq = reinterpret_cast<S*>(smem);
  float* h = reinterpret_cast<float*>(smem + align16(int64_t(gd) * d * sizeof(S)));
  float* rh = h + kTileRows * d;

  const S* rn = r_heads + n * gd * d;  // [Gx·D][D] row-major
  for (int i = threadIdx.x; i < gd * d; i += blockDim.x) {
    const int j = i / d, k = i % d;
    rq[(int64_t(k / 4) * gd + j) * 4 + k % 4] = rn[i];
  }
  for (int i = threadIdx.x; i < rows * d; i += blockDim.x) {
    const int64_t b = b0 + i / d;
    const float v = p.s0.at(0, b, 0, n, i % d);
    h[i] = v;
    if (p.h_gemm.ptr) p.h_gemm.at(0, b, 0, n, i % d) = static_cast<S>(v);
  }
  ForwardStepParams<float, S> q = p;
  q.rh = Slots<const float>{rh, 0, gd, d, 0, b0};  // [rows][Gx][D] of this head
  q.h_next = Slots<float>{h, 0, d, 0, 0, b0};
  __syncthreads();

  for (int64_t t = 0; t < p.extent.steps; ++t) {
    tile_recurrent_matmul(rq, h, rh, rows, gd, d);
    __syncthreads();
    for (int i = threadIdx.x; i < rows * d; i += blockDim.x)
      forward_step_element<Cell>(q, t, ((b0 + i / d) * p.extent.heads + n) * d + i % d);
    __syncthreads();
  }
}

template <class Cell, class S>
__global__ void __launch_bounds__(kThreads) fused_backward_kernel(BackwardStepParams<float, S> p,
                                                                  const S* r_heads) {
  const int d = int(p.extent.head_dim), gd = Cell::kGates * d;
  const int64_t n = blockIdx.y, b0 = int64_t(blockIdx.x) * kTileRows;
  const int rows = int(min(int64_t(kTileRows), p.extent.batch - b0));
  const int groups = blockDim.x / d;
  extern __shared__ __align__(16) unsigned char smem[];
  S* r = reinterpret_cast<S*>(smem);
  float* delta = reinterpret_cast<float*>(smem + align16(int64_t(gd) * d * sizeof(S)));
  float* partial = delta + kTileRows * gd;
  float* dh = partial + groups * kTileRows * d;
  float* carry = dh + kTileRows * d;

  const S* rn = r_heads + n * gd * d;
  for (int i = threadIdx.x; i < gd * d; i += blockDim.x) r[i] = rn[i];
  BackwardStepParams<float, S> q = p;
  const bool through_r = p.dh_rec.ptr != nullptr;  // null: gradient_recurrent_cut
  if (through_r) q.dh_rec = Slots<const float>{dh, 0, d, 0, 0, b0};
  q.dh_rec_slots = 1;
  q.carry = Slots<float>{carry, 0, Cell::kStates * d, d, 0, b0};
  q.d_rh_next = Slots<float>{delta, 0, gd, d, 0, b0};
  __syncthreads();

  const auto element = [&](int i) { return ((b0 + i / d) * p.extent.heads + n) * d + i % d; };
  for (int64_t t = p.extent.steps - 1; t >= 0; --t) {
    if (through_r && t + 1 < p.extent.steps) {
      tile_transposed_matmul(r, delta, partial, dh, rows, gd, d);
      __syncthreads();
    }
    for (int i = threadIdx.x; i < rows * d; i += blockDim.x)
      backward_step_element<Cell>(q, t, element(i));
    __syncthreads();
  }
  if (through_r) {
    tile_transposed_matmul(r, delta, partial, dh, rows, gd, d);
    __syncthreads();
  }
  for (int i = threadIdx.x; i < rows * d; i += blockDim.x)
    initial_state_gradient_element<Cell>(q, element(i));
}

template <class Cell, class S>
cudaError_t launch_forward(const ForwardStepParams<float, S>& p, const S* r_heads,
                           cudaStream_t stream) {
  const Layout l = layout(Cell::kGates, Cell::kStates, p.extent.head_dim, sizeof(S));
  return launch_persistent(fused_forward_kernel<Cell, S>, kThreads, kTileRows, l.forward_smem, stream, 1, p,
                           r_heads);
}

template <class Cell, class S>
cudaError_t launch_backward(const BackwardStepParams<float, S>& p, const S* r_heads,
                            cudaStream_t stream) {
  const Layout l = layout(Cell::kGates, Cell::kStates, p.extent.head_dim, sizeof(S));
  return launch_persistent(fused_backward_kernel<Cell, S>, kThreads, kTileRows, l.backward_smem, stream, 1,
                           p, r_heads);
}

#define FLASHRNN_FUSED_INSTANTIATE_CELL(CELL, S)                                               \
  template cudaError_t launch_forward<cells::CELL, S>(const ForwardStepParams<float, S>&,       \
                                                       const S*, cudaStream_t);                \
  template cudaError_t launch_backward<cells::CELL, S>(const BackwardStepParams<float, S>&,     \
                                                        const S*, cudaStream_t);

#define FLASHRNN_FUSED_INSTANTIATE(S) FLASHRNN_FOR_EACH_CELL(FLASHRNN_FUSED_INSTANTIATE_CELL, S)

}  // namespace flashrnn::fused

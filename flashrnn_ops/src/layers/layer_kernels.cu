// The kernels of flashrnn/layers.h. Memory-bound: each reads its inputs once
// (rows and time windows are kept in registers) and accumulates in float32.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <numeric>
#include <type_traits>

#include "layers/layer_launch.h"

namespace flashrnn::layers {
namespace {

// A row of the norm is held by a group of at most a warp, Pairs pairs a lane:
// kShortRowPairs for rows up to 256 (several rows share a warp and few
// registers keep many warps resident), kMidRowPairs up to 768 (a model's
// width), else kLongRowPairs. A lane's registers hold Pairs pairs however
// short the row, so the fewest that hold it keep the most warps resident: at
// 768 the input gradient takes 74 registers a thread with 12, 93 with 16
// (three blocks of 256 threads an SM instead of two; ptxas, sm_90a).
constexpr int kShortRowPairs = 4;
constexpr int kMidRowPairs = 12;
constexpr int kLongRowPairs = kMaxNormHeadDim / (2 * 32);
constexpr int kThreads = 256;

__device__ __forceinline__ float sigmoid(float a) { return 1.0f / (1.0f + __expf(-a)); }

template <class T>
__device__ __forceinline__ float load(const T* p) { return static_cast<float>(*p); }

// Two consecutive values of T as floats, and back (the callers keep pairs
// aligned: even widths, even offsets).
template <class T> struct PairOf;
template <> struct PairOf<float> { using type = float2; };
template <> struct PairOf<__nv_bfloat16> { using type = __nv_bfloat162; };
template <> struct PairOf<__half> { using type = __half2; };

template <class T>
__device__ __forceinline__ void load_pair(const T* p, float& a, float& b) {
  const typename PairOf<T>::type v = *reinterpret_cast<const typename PairOf<T>::type*>(p);
  a = static_cast<float>(v.x);
  b = static_cast<float>(v.y);
}
template <class T>
__device__ __forceinline__ void store_pair(T* p, float a, float b) {
  typename PairOf<T>::type v;
  v.x = static_cast<T>(a);
  v.y = static_cast<T>(b);
  *reinterpret_cast<typename PairOf<T>::type*>(p) = v;
}

// ---- headwise norm: a group of `group` lanes per row of head_dim values ----
// Lane l of a group holds pairs l, l + group, l + 2·group, ... of its row in
// registers (at most Pairs): one read of x, one write of y.

__device__ __forceinline__ float group_sum(float v, int group) {
  for (int offset = group / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

struct NormRow {
  int64_t row;
  int lane;
  bool active;
};

__device__ __forceinline__ NormRow norm_row(const HeadwiseNormShape& s, int group) {
  const int64_t thread = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  return {thread / group, int(threadIdx.x % group), thread / group < s.rows};
}

// A float as it reads back after a store to T (the identity for float).
template <class T>
__device__ __forceinline__ float rounded_to(float v) { return static_cast<float>(static_cast<T>(v)); }

// kResidual: the row normalised is x + delta, stored to `sum` (rounded to T,
// as ATen's add of the two would store it) and normalised as stored.
template <class T, class Out, int Pairs, bool kResidual>
__global__ void headwise_norm_forward_kernel(const T* __restrict__ x, const Out* __restrict__ delta,
                                             T* __restrict__ sum_out, const float* __restrict__ weight,
                                             Out* __restrict__ y, float* __restrict__ mean_out,
                                             float* __restrict__ rstd_out, HeadwiseNormShape s, float eps,
                                             int group) {
  const NormRow r = norm_row(s, group);  // inactive lanes still join the shuffles
  const int pairs = s.head_dim / 2;
  const int64_t base = r.row * s.head_dim;
  float v[2 * Pairs];
  float sum = 0.0f;
#pragma unroll
  for (int p = 0; p < Pairs; ++p) {
    const int pair = r.lane + p * group;
    v[2 * p] = v[2 * p + 1] = 0.0f;
    if (r.active && pair < pairs) {
      load_pair(x + base + 2 * pair, v[2 * p], v[2 * p + 1]);
      if constexpr (kResidual) {
        float d0, d1;
        load_pair(delta + base + 2 * pair, d0, d1);
        v[2 * p] = rounded_to<T>(v[2 * p] + d0);
        v[2 * p + 1] = rounded_to<T>(v[2 * p + 1] + d1);
        store_pair(sum_out + base + 2 * pair, v[2 * p], v[2 * p + 1]);
      }
    }
    sum += v[2 * p] + v[2 * p + 1];
  }
  const float mean = group_sum(sum, group) / float(s.head_dim);
  float squares = 0.0f;  // two passes over the registers: no cancellation
#pragma unroll
  for (int p = 0; p < Pairs; ++p) {
    if (r.lane + p * group < pairs) squares += (v[2 * p] - mean) * (v[2 * p] - mean) + (v[2 * p + 1] - mean) * (v[2 * p + 1] - mean);
  }
  const float rstd = rsqrtf(group_sum(squares, group) / float(s.head_dim) + eps);
  if (!r.active) return;
  const float* w = weight + (r.row % s.heads) * s.head_dim;
#pragma unroll
  for (int p = 0; p < Pairs; ++p) {
    const int pair = r.lane + p * group;
    if (pair < pairs)
      store_pair(y + base + 2 * pair, (v[2 * p] - mean) * rstd * w[2 * pair], (v[2 * p + 1] - mean) * rstd * w[2 * pair + 1]);
  }
  if (r.lane == 0) {
    mean_out[r.row] = mean;
    rstd_out[r.row] = rstd;
  }
}

// dx = rstd · (g − mean(g) − x̂ · mean(g · x̂)) with g = dy · weight, and the
// weight's gradient Σ dy · x̂ over the rows, in one pass over x and dy. The
// grid is persistent: lane group q of the grid's `groups` takes rows q,
// q + groups, ..., `groups` a multiple of the heads, so that its rows are one
// head's and each lane's columns stay the same. A group sums dy · x̂ of its
// columns in its slice of shared memory and writes the sums once, to
// partial[q / heads][head · head_dim + column] (headwise_norm_weight_chunks).
// kResidual: x is the sum x + delta of the forward, dx (rounded to T) is
// added to the sum's own gradient d_sum (none when null), and the total goes
// to dx and, in Out, to d_delta: the sums and roundings of autograd's
// accumulation and AddBackward's cast.
// Registers: the loop keeps more live than one row's pass; capped for two
// blocks an SM (111 at 12 pairs a lane, ptxas sm_90a; 140 uncapped).
template <class T, class Out, int Pairs, bool kResidual>
__global__ void __launch_bounds__(kThreads, 2)
    headwise_norm_backward_kernel(const T* __restrict__ x, const Out* __restrict__ dy, const float* __restrict__ weight,
                                  const float* __restrict__ mean, const float* __restrict__ rstd,
                                  const T* __restrict__ d_sum, T* __restrict__ dx, Out* __restrict__ d_delta,
                                  float* __restrict__ partial, HeadwiseNormShape s, int group_size) {
  extern __shared__ float2 weight_sums[];  // [the block's groups][head_dim / 2]
  // A row of more than kShortRowPairs pairs a lane takes a whole warp: with
  // the group a constant, a lane's addresses are a base and immediate offsets
  // (a runtime group keeps one per pair: 166 registers at 12 pairs).
  const int group = Pairs > kShortRowPairs ? 32 : group_size;
  const int pairs = s.head_dim / 2, lane = int(threadIdx.x) % group;
  const int block_groups = int(blockDim.x) / group;
  const int64_t groups = int64_t(gridDim.x) * block_groups;
  const int64_t q = int64_t(blockIdx.x) * block_groups + threadIdx.x / group;
  // The first group of the lane's warp: its rows bound the loop, so every lane
  // of a warp runs it as often (the shuffles take all 32; a lane whose row is
  // past the end joins them inactive).
  const int64_t warp_q = int64_t(blockIdx.x) * block_groups + (threadIdx.x & ~31u) / group;
  const int head = int(q % s.heads);
  const float* w = weight + head * s.head_dim;
  float2* sums = weight_sums + (threadIdx.x / group) * pairs;
#pragma unroll
  for (int p = 0; p < Pairs; ++p)
    if (lane + p * group < pairs) sums[lane + p * group] = make_float2(0.0f, 0.0f);

  for (int64_t step = 0; warp_q + step * groups < s.rows; ++step) {
    const int64_t row = q + step * groups;
    const bool active = row < s.rows;
    const int64_t base = row * s.head_dim;
    const float mu = active ? mean[row] : 0.0f, rs = active ? rstd[row] : 0.0f;
    float xhat[2 * Pairs], g[2 * Pairs];
    float sum_g = 0.0f, sum_gx = 0.0f;
#pragma unroll
    for (int p = 0; p < Pairs; ++p) {
      const int pair = lane + p * group;
      float x0 = 0.0f, x1 = 0.0f, d0 = 0.0f, d1 = 0.0f;
      if (active && pair < pairs) {
        load_pair(x + base + 2 * pair, x0, x1);
        load_pair(dy + base + 2 * pair, d0, d1);
      }
      xhat[2 * p] = (x0 - mu) * rs;
      xhat[2 * p + 1] = (x1 - mu) * rs;
      if (active && pair < pairs) {
        float2 acc = sums[pair];
        acc.x += d0 * xhat[2 * p];
        acc.y += d1 * xhat[2 * p + 1];
        sums[pair] = acc;
        d0 *= w[2 * pair];
        d1 *= w[2 * pair + 1];
      }
      g[2 * p] = d0;
      g[2 * p + 1] = d1;
      sum_g += d0 + d1;
      sum_gx += d0 * xhat[2 * p] + d1 * xhat[2 * p + 1];
    }
    const float mean_g = group_sum(sum_g, group) / float(s.head_dim);
    const float mean_gx = group_sum(sum_gx, group) / float(s.head_dim);
    if (!active) continue;
#pragma unroll
    for (int p = 0; p < Pairs; ++p) {
      const int pair = lane + p * group;
      if (pair >= pairs) continue;
      float d0 = rs * (g[2 * p] - mean_g - xhat[2 * p] * mean_gx);
      float d1 = rs * (g[2 * p + 1] - mean_g - xhat[2 * p + 1] * mean_gx);
      if constexpr (kResidual) {
        if (d_sum != nullptr) {
          float s0, s1;
          load_pair(d_sum + base + 2 * pair, s0, s1);
          // __fadd_rn: never contracted with the product above into an FMA,
          // which would skip the rounding of dx that autograd's sum sees.
          d0 = __fadd_rn(rounded_to<T>(d0), s0);
          d1 = __fadd_rn(rounded_to<T>(d1), s1);
        }
        d0 = rounded_to<T>(d0);
        d1 = rounded_to<T>(d1);
        store_pair(d_delta + base + 2 * pair, d0, d1);
      }
      store_pair(dx + base + 2 * pair, d0, d1);
    }
  }
  float2* out = reinterpret_cast<float2*>(partial + (q / s.heads) * s.heads * s.head_dim + head * s.head_dim);
#pragma unroll
  for (int p = 0; p < Pairs; ++p)
    if (lane + p * group < pairs) out[lane + p * group] = sums[lane + p * group];
}

// ---- causal depthwise convolution + SiLU, [B, T, C] ----
// A thread owns a pair of channels over a tile of kConvTile time steps of one
// sequence and walks it in time order, the last kMaxCausalConvKernel inputs in
// registers. Taps are right-aligned in a register array of kMaxCausalConvKernel
// (zeros in front), so every register index is a compile-time constant.

constexpr int kConvTile = 64;
constexpr int kConvThreads = 128;
constexpr int kK = kMaxCausalConvKernel;

struct ConvTile {
  int c;              // the first of the thread's two channels
  int64_t sequence;   // b
  int64_t first, end; // the tile's time steps [first, end)
  bool active;
};

// Tiles of kConvTile steps per sequence; the grid's y runs over batch × tiles.
__host__ __device__ __forceinline__ int64_t time_tiles(const CausalConvShape& s) {
  return (s.steps + kConvTile - 1) / kConvTile;
}

__device__ __forceinline__ ConvTile conv_tile(const CausalConvShape& s) {
  const int64_t tiles = time_tiles(s);
  ConvTile t;
  t.c = 2 * int(blockIdx.x * blockDim.x + threadIdx.x);
  t.sequence = blockIdx.y / tiles;
  t.first = (blockIdx.y % tiles) * kConvTile;
  t.end = min(s.steps, t.first + kConvTile);
  t.active = t.c < s.channels;
  return t;
}

// Right-aligned taps of channels c and c + 1.
__device__ __forceinline__ void load_taps(const float* weight, int c, int kernel, float (&w0)[kK], float (&w1)[kK]) {
#pragma unroll
  for (int j = 0; j < kK; ++j) {
    const int k = j - (kK - kernel);
    w0[j] = k >= 0 ? weight[int64_t(c) * kernel + k] : 0.0f;
    w1[j] = k >= 0 ? weight[int64_t(c + 1) * kernel + k] : 0.0f;
  }
}

// The window before time step `first`: x at first − kK + 1 .. first − 1 in
// slots 0 .. kK − 2 (zeros before t = 0 and where no tap reads).
template <class T>
__device__ __forceinline__ void load_window(const T* row, int64_t first, int kernel, int channels, float (&x0)[kK],
                                            float (&x1)[kK]) {
#pragma unroll
  for (int j = 0; j < kK - 1; ++j) {
    const int64_t t = first - (kK - 1) + j;
    x0[j] = x1[j] = 0.0f;
    if (t >= 0 && j >= kK - kernel) load_pair(row + t * channels, x0[j], x1[j]);
  }
}

template <class T>
__global__ void __launch_bounds__(kConvThreads) causal_conv_silu_forward_kernel(
    const T* __restrict__ x, const float* __restrict__ weight, const float* __restrict__ bias, T* __restrict__ y,
    CausalConvShape s) {
  const ConvTile tile = conv_tile(s);
  if (!tile.active) return;
  const int64_t offset = tile.sequence * s.steps * s.channels + tile.c;
  const T* xs = x + offset;
  T* ys = y + offset;
  float w0[kK], w1[kK], x0[kK], x1[kK];
  load_taps(weight, tile.c, s.kernel, w0, w1);
  const float b0 = bias[tile.c], b1 = bias[tile.c + 1];
  load_window(xs, tile.first, s.kernel, s.channels, x0, x1);
  for (int64_t t = tile.first; t < tile.end; ++t) {
    load_pair(xs + t * s.channels, x0[kK - 1], x1[kK - 1]);
    float a0 = b0, a1 = b1;
#pragma unroll
    for (int j = 0; j < kK; ++j) {
      a0 += w0[j] * x0[j];
      a1 += w1[j] * x1[j];
    }
    store_pair(ys + t * s.channels, a0 * sigmoid(a0), a1 * sigmoid(a1));
#pragma unroll
    for (int j = 0; j < kK - 1; ++j) {
      x0[j] = x0[j + 1];
      x1[j] = x1[j + 1];
    }
  }
}

__device__ __forceinline__ float silu_grad(float a) {
  const float sg = sigmoid(a);
  return sg * (1.0f + a * (1.0f - sg));
}

// One walk gives dx and the tile's parameter sums. g_t = dy_t · silu'(a_t)
// (a recomputed) reaches dx at t − kK + 1 + j through tap j; those sums wait
// in a ring, and the oldest is complete once g up to its t + K − 1 is in: the
// walk runs K − 1 steps past the tile for it.
template <class T>
__global__ void __launch_bounds__(kConvThreads) causal_conv_silu_backward_kernel(
    const T* __restrict__ x, const T* __restrict__ dy, const float* __restrict__ weight,
    const float* __restrict__ bias, T* __restrict__ dx, float* __restrict__ partial, CausalConvShape s) {
  const ConvTile tile = conv_tile(s);
  if (!tile.active) return;
  const int64_t offset = tile.sequence * s.steps * s.channels + tile.c;
  const T* xs = x + offset;
  const T* dys = dy + offset;
  T* dxs = dx + offset;
  float w0[kK], w1[kK], x0[kK], x1[kK];
  float ring0[kK] = {}, ring1[kK] = {}, dw0[kK] = {}, dw1[kK] = {};
  float db0 = 0.0f, db1 = 0.0f;
  load_taps(weight, tile.c, s.kernel, w0, w1);
  const float b0 = bias[tile.c], b1 = bias[tile.c + 1];
  load_window(xs, tile.first, s.kernel, s.channels, x0, x1);
  const int64_t walk_end = min(s.steps, tile.end + s.kernel - 1);
  for (int64_t t = tile.first; t < tile.end + kK - 1; ++t) {
    float g0 = 0.0f, g1 = 0.0f;
    x0[kK - 1] = x1[kK - 1] = 0.0f;
    if (t < walk_end) {
      load_pair(xs + t * s.channels, x0[kK - 1], x1[kK - 1]);
      float a0 = b0, a1 = b1;
#pragma unroll
      for (int j = 0; j < kK; ++j) {
        a0 += w0[j] * x0[j];
        a1 += w1[j] * x1[j];
      }
      float d0, d1;
      load_pair(dys + t * s.channels, d0, d1);
      g0 = d0 * silu_grad(a0);
      g1 = d1 * silu_grad(a1);
    }
    if (t < tile.end) {
      db0 += g0;
      db1 += g1;
#pragma unroll
      for (int j = 0; j < kK; ++j) {
        dw0[j] += g0 * x0[j];
        dw1[j] += g1 * x1[j];
      }
    }
#pragma unroll
    for (int j = 0; j < kK; ++j) {
      ring0[j] += w0[j] * g0;
      ring1[j] += w1[j] * g1;
    }
    const int64_t done = t - (kK - 1);  // ring slot 0's time step: complete now
    if (done >= tile.first && done < tile.end) store_pair(dxs + done * s.channels, ring0[0], ring1[0]);
#pragma unroll
    for (int j = 0; j < kK - 1; ++j) {
      ring0[j] = ring0[j + 1];
      ring1[j] = ring1[j + 1];
      x0[j] = x0[j + 1];
      x1[j] = x1[j + 1];
    }
    ring0[kK - 1] = ring1[kK - 1] = 0.0f;
  }
  float* out = partial + int64_t(blockIdx.y) * (s.kernel + 1) * s.channels + tile.c;
#pragma unroll
  for (int j = 0; j < kK; ++j) {
    const int k = j - (kK - s.kernel);
    if (k >= 0) {
      out[int64_t(k) * s.channels] = dw0[j];
      out[int64_t(k) * s.channels + 1] = dw1[j];
    }
  }
  out[int64_t(s.kernel) * s.channels] = db0;
  out[int64_t(s.kernel) * s.channels + 1] = db1;
}

// ---- the SiLU-gated product silu(gate) · up, elementwise ----
// A thread takes one pair of values per iteration of a grid-stride loop; the
// grid gives each thread about kSiluMulPairsPerThread pairs.

constexpr int kSiluMulThreads = 256;
constexpr int kSiluMulPairsPerThread = 4;

template <class T>
__global__ void __launch_bounds__(kSiluMulThreads) silu_mul_forward_kernel(const T* __restrict__ gate,
                                                                           const T* __restrict__ up,
                                                                           T* __restrict__ y, int64_t pairs) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < pairs; i += stride) {
    float g0, g1, u0, u1;
    load_pair(gate + 2 * i, g0, g1);
    load_pair(up + 2 * i, u0, u1);
    store_pair(y + 2 * i, g0 * sigmoid(g0) * u0, g1 * sigmoid(g1) * u1);
  }
}

// d_gate = dy · up · σ(g) · (1 + g · (1 − σ(g))), d_up = dy · silu(g).
template <class T>
__global__ void __launch_bounds__(kSiluMulThreads) silu_mul_backward_kernel(
    const T* __restrict__ gate, const T* __restrict__ up, const T* __restrict__ dy, T* __restrict__ d_gate,
    T* __restrict__ d_up, int64_t pairs) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < pairs; i += stride) {
    float g[2], u[2], d[2], dg[2], du[2];
    load_pair(gate + 2 * i, g[0], g[1]);
    load_pair(up + 2 * i, u[0], u[1]);
    load_pair(dy + 2 * i, d[0], d[1]);
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const float s = sigmoid(g[k]);
      dg[k] = d[k] * u[k] * s * (1.0f + g[k] * (1.0f - s));
      du[k] = d[k] * g[k] * s;
    }
    store_pair(d_gate + 2 * i, dg[0], dg[1]);
    store_pair(d_up + 2 * i, du[0], du[1]);
  }
}

unsigned silu_mul_blocks(int64_t pairs) {
  const int64_t per_block = int64_t(kSiluMulThreads) * kSiluMulPairsPerThread;
  return unsigned(std::clamp<int64_t>((pairs + per_block - 1) / per_block, 1, int64_t(1) << 20));
}

// Lanes per row: the smallest power of two that leaves each at most
// kShortRowPairs pairs, at most a warp (a row of up to kMaxNormHeadDim then
// leaves a lane up to kLongRowPairs pairs).
int norm_group(int head_dim) {
  int group = 1;
  while (group < 32 && group * 2 * kShortRowPairs < head_dim) group *= 2;
  return group;
}

// Calls launch(std::integral_constant<int, Pairs>{}, group, blocks): the
// registers a lane needs for the row, the lanes per row, the blocks of rows.
template <class Launch>
void with_norm_geometry(const HeadwiseNormShape& s, Launch&& launch) {
  const int group = norm_group(s.head_dim);
  const unsigned blocks = unsigned((s.rows * group + kThreads - 1) / kThreads);
  if (s.head_dim <= 2 * 32 * kShortRowPairs)
    launch(std::integral_constant<int, kShortRowPairs>{}, group, blocks);
  else if (s.head_dim <= 2 * 32 * kMidRowPairs)
    launch(std::integral_constant<int, kMidRowPairs>{}, group, blocks);
  else
    launch(std::integral_constant<int, kLongRowPairs>{}, group, blocks);
}

// Calls launch(std::bool_constant<residual>{}): the kernels' residual form
// (kResidual) as a compile-time flag.
template <class Launch>
void with_residual_form(bool residual, Launch&& launch) {
  if (residual)
    launch(std::true_type{});
  else
    launch(std::false_type{});
}

// The backward's shared memory: a float per column for each lane group of a block.
size_t norm_backward_smem_bytes(const HeadwiseNormShape& s, int group) {
  return size_t(kThreads / group) * s.head_dim * sizeof(float);
}

// The grid's y dimension takes at most this many blocks.
constexpr int64_t kMaxGridY = 65535;

dim3 conv_grid(const CausalConvShape& s) {
  return dim3(unsigned((s.channels / 2 + kConvThreads - 1) / kConvThreads), unsigned(s.batch * time_tiles(s)));
}

}  // namespace

bool headwise_norm_kernels_take(HeadwiseNormShape shape) {
  return shape.head_dim % 2 == 0 && shape.head_dim <= kMaxNormHeadDim;
}
bool causal_conv_kernels_take(CausalConvShape shape) {
  return shape.channels % 2 == 0 && shape.kernel >= 1 && shape.kernel <= kMaxCausalConvKernel &&
         shape.batch * time_tiles(shape) <= kMaxGridY;
}
// The backward's persistent grid (headwise_norm_backward_kernel) in rows of
// partial weight sums, one per `heads` lane groups: as many blocks as the
// device keeps resident at once, or fewer where the rows are fewer than their
// lane groups, rounded up to make the lane groups a multiple of the heads.
// None for no rows.
template <class T, class Out>
int headwise_norm_weight_chunks(HeadwiseNormShape shape, bool residual) {
  if (shape.rows == 0) return 0;
  int chunks = 0;
  with_norm_geometry(shape, [&](auto pairs, int group, unsigned row_blocks) {
    with_residual_form(residual, [&](auto form) {
      const int block_groups = kThreads / group;
      int device = 0, sms = 1, per_sm = 1;
      cudaGetDevice(&device);
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(
          &per_sm, headwise_norm_backward_kernel<T, Out, decltype(pairs)::value, decltype(form)::value>, kThreads,
          norm_backward_smem_bytes(shape, group));
      const int64_t resident = int64_t(sms) * std::max(per_sm, 1);
      const int64_t unit = shape.heads / std::gcd(shape.heads, block_groups);
      const int64_t blocks = (std::min<int64_t>(row_blocks, resident) + unit - 1) / unit * unit;
      chunks = int(blocks * block_groups / shape.heads);
    });
  });
  return chunks;
}
int causal_conv_param_chunks(CausalConvShape shape) { return int(shape.batch * time_tiles(shape)); }

template <class T, class Out>
cudaError_t launch_headwise_norm_forward(const T* x, NormResidual<const Out*, T*> residual, const float* weight,
                                         Out* y, float* mean, float* rstd, HeadwiseNormShape shape, float eps,
                                         cudaStream_t stream) {
  with_norm_geometry(shape, [&](auto pairs, int group, unsigned blocks) {
    with_residual_form(residual.delta != nullptr, [&](auto form) {
      headwise_norm_forward_kernel<T, Out, decltype(pairs)::value, decltype(form)::value>
          <<<blocks, kThreads, 0, stream>>>(x, residual.delta, residual.sum, weight, y, mean, rstd, shape, eps, group);
    });
  });
  return cudaGetLastError();
}

template <class T, class Out>
cudaError_t launch_headwise_norm_backward(const T* x, const Out* dy, const float* weight, const float* mean,
                                          const float* rstd, NormResidual<Out*, const T*> residual, T* dx,
                                          float* d_weight_partial, HeadwiseNormShape shape, int chunks,
                                          cudaStream_t stream) {
  if (chunks == 0) return cudaSuccess;
  cudaError_t status = cudaSuccess;
  with_norm_geometry(shape, [&](auto pairs, int group, unsigned) {
    // The lane groups headwise_norm_weight_chunks counted, whole blocks of them.
    const int64_t groups = int64_t(chunks) * shape.heads, block_groups = kThreads / group;
    if (groups % block_groups != 0) {
      status = cudaErrorInvalidValue;
      return;
    }
    with_residual_form(residual.delta != nullptr, [&](auto form) {
      headwise_norm_backward_kernel<T, Out, decltype(pairs)::value, decltype(form)::value>
          <<<unsigned(groups / block_groups), kThreads, norm_backward_smem_bytes(shape, group), stream>>>(
              x, dy, weight, mean, rstd, residual.sum, dx, residual.delta, d_weight_partial, shape, group);
    });
  });
  return status != cudaSuccess ? status : cudaGetLastError();
}

template <class T>
cudaError_t launch_causal_conv_silu_forward(const T* x, const float* weight, const float* bias, T* y,
                                            CausalConvShape shape, cudaStream_t stream) {
  causal_conv_silu_forward_kernel<T><<<conv_grid(shape), kConvThreads, 0, stream>>>(x, weight, bias, y, shape);
  return cudaGetLastError();
}

template <class T>
cudaError_t launch_causal_conv_silu_backward(const T* x, const T* dy, const float* weight, const float* bias,
                                             T* dx, float* d_param_partial, CausalConvShape shape, int /*chunks*/,
                                             cudaStream_t stream) {
  causal_conv_silu_backward_kernel<T>
      <<<conv_grid(shape), kConvThreads, 0, stream>>>(x, dy, weight, bias, dx, d_param_partial, shape);
  return cudaGetLastError();
}

template <class T>
cudaError_t launch_silu_mul_forward(const T* gate, const T* up, T* y, int64_t pairs, cudaStream_t stream) {
  silu_mul_forward_kernel<T><<<silu_mul_blocks(pairs), kSiluMulThreads, 0, stream>>>(gate, up, y, pairs);
  return cudaGetLastError();
}

template <class T>
cudaError_t launch_silu_mul_backward(const T* gate, const T* up, const T* dy, T* d_gate, T* d_up, int64_t pairs,
                                     cudaStream_t stream) {
  silu_mul_backward_kernel<T>
      <<<silu_mul_blocks(pairs), kSiluMulThreads, 0, stream>>>(gate, up, dy, d_gate, d_up, pairs);
  return cudaGetLastError();
}

#define FLASHRNN_NORM_INSTANTIATE(T, OUT)                                                                       \
  template cudaError_t launch_headwise_norm_forward<T, OUT>(const T*, NormResidual<const OUT*, T*>, const float*, \
                                                            OUT*, float*, float*, HeadwiseNormShape, float,     \
                                                            cudaStream_t);                                      \
  template cudaError_t launch_headwise_norm_backward<T, OUT>(const T*, const OUT*, const float*, const float*,  \
                                                             const float*, NormResidual<OUT*, const T*>, T*,    \
                                                             float*, HeadwiseNormShape, int, cudaStream_t);  \
  template int headwise_norm_weight_chunks<T, OUT>(HeadwiseNormShape, bool);

#define FLASHRNN_CONV_INSTANTIATE(T)                                                                           \
  template cudaError_t launch_causal_conv_silu_forward<T>(const T*, const float*, const float*, T*,             \
                                                          CausalConvShape, cudaStream_t);                       \
  template cudaError_t launch_causal_conv_silu_backward<T>(const T*, const T*, const float*, const float*, T*,  \
                                                           float*, CausalConvShape, int, cudaStream_t);

#define FLASHRNN_SILU_MUL_INSTANTIATE(T)                                                                    \
  template cudaError_t launch_silu_mul_forward<T>(const T*, const T*, T*, int64_t, cudaStream_t);           \
  template cudaError_t launch_silu_mul_backward<T>(const T*, const T*, const T*, T*, T*, int64_t, cudaStream_t);

// The norm's output in its input's type, or float32 rows to bf16 / fp16 (a
// float32 residual stream normalised into autocast's dtype).
FLASHRNN_NORM_INSTANTIATE(float, float)
FLASHRNN_NORM_INSTANTIATE(__nv_bfloat16, __nv_bfloat16)
FLASHRNN_NORM_INSTANTIATE(__half, __half)
FLASHRNN_NORM_INSTANTIATE(float, __nv_bfloat16)
FLASHRNN_NORM_INSTANTIATE(float, __half)
FLASHRNN_CONV_INSTANTIATE(float)
FLASHRNN_CONV_INSTANTIATE(__nv_bfloat16)
FLASHRNN_CONV_INSTANTIATE(__half)
FLASHRNN_SILU_MUL_INSTANTIATE(float)
FLASHRNN_SILU_MUL_INSTANTIATE(__nv_bfloat16)
FLASHRNN_SILU_MUL_INSTANTIATE(__half)

}  // namespace flashrnn::layers

// Scalar math shared by the cell definitions. Everything here compiles as plain
// C++ (the vanilla backend on the CPU) and as CUDA device code (the GPU backends).
#pragma once

#include <math.h>

#if defined(__CUDACC__)
#define FLASHRNN_HD __host__ __device__ __forceinline__
#else
#define FLASHRNN_HD inline
#endif

namespace flashrnn::cells {

// Overloads instead of std:: calls: <cmath>'s std::exp is not a device function.
FLASHRNN_HD float exp_(float x) { return expf(x); }
FLASHRNN_HD double exp_(double x) { return exp(x); }
FLASHRNN_HD float tanh_(float x) { return tanhf(x); }
FLASHRNN_HD double tanh_(double x) { return tanh(x); }
FLASHRNN_HD float log1p_(float x) { return log1pf(x); }
FLASHRNN_HD double log1p_(double x) { return log1p(x); }

template <class T> FLASHRNN_HD T max_(T a, T b) { return a > b ? a : b; }
template <class T> FLASHRNN_HD T min_(T a, T b) { return a < b ? a : b; }
// x within [lo, hi]; a NaN stays NaN (as torch.clamp), so infinite bounds clamp nothing.
template <class T> FLASHRNN_HD T clamp_(T x, T lo, T hi) { return x < lo ? lo : x > hi ? hi : x; }

template <class T> FLASHRNN_HD T sigmoid(T x) { return T(1) / (T(1) + exp_(-x)); }

// log σ(x) = min(x, 0) − log(1 + e^{−|x|}): finite for every finite x.
template <class T> FLASHRNN_HD T log_sigmoid(T x) {
  const T abs_x = x < T(0) ? -x : x;
  return min_(x, T(0)) - log1p_(exp_(-abs_x));
}

// Math policies: a cell computes its activations and quotients through M::exp,
// M::tanh, M::sigmoid, M::log_sigmoid and M::divide, M a template parameter of
// its forward and backward.
// PreciseMath is libm's: every backend's default and the float64 reference.
struct PreciseMath {
  template <class T> FLASHRNN_HD static T exp(T x) { return exp_(x); }
  template <class T> FLASHRNN_HD static T tanh(T x) { return tanh_(x); }
  template <class T> FLASHRNN_HD static T sigmoid(T x) { return cells::sigmoid(x); }
  template <class T> FLASHRNN_HD static T log_sigmoid(T x) { return cells::log_sigmoid(x); }
  template <class T> FLASHRNN_HD static T divide(T a, T b) { return a / b; }
};

// FastMath uses the GPU's special-function unit (tanh.approx, ex2.approx,
// lg2.approx, rcp.approx: relative error below ~1e-3), a few instructions where
// libm's float versions take tens with branches. The tensor-core kernels use
// it: their operands are bf16/fp16, rounded far more coarsely. On the host it
// is PreciseMath. Subnormal results and operands flush to zero (.ftz): without
// it each ex2 / lg2 / rcp comes with a compare and two rescaling multiplies for
// the subnormal range (sLSTM's 12x64 inference step: 33 compares in 459
// instructions), and a gate or quotient of 1e-38 is 0 to the model.
struct FastMath {
#if defined(__CUDA_ARCH__)
  __device__ __forceinline__ static float tanh(float x) {
    float y;
    asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
  }
  __device__ __forceinline__ static float exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
  }
  __device__ __forceinline__ static float log2(float x) {
    float y;
    asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
  }
  __device__ __forceinline__ static float exp(float x) { return exp2(x * 1.4426950408889634f); }
  __device__ __forceinline__ static float sigmoid(float x) { return 0.5f * tanh(0.5f * x) + 0.5f; }
  __device__ __forceinline__ static float log_sigmoid(float x) {
    return fminf(x, 0.f) - 0.6931471805599453f * log2(1.f + exp(-fabsf(x)));
  }
  // a · 1/b: for the quotients the cells take (n >= 1 in sLSTM) one MUFU.RCP.
  __device__ __forceinline__ static float divide(float a, float b) {
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(b));
    return a * r;
  }
#else
  template <class T> static T exp(T x) { return exp_(x); }
  template <class T> static T tanh(T x) { return tanh_(x); }
  template <class T> static T sigmoid(T x) { return cells::sigmoid(x); }
  template <class T> static T log_sigmoid(T x) { return cells::log_sigmoid(x); }
  template <class T> static T divide(T a, T b) { return a / b; }
#endif
};

}  // namespace flashrnn::cells

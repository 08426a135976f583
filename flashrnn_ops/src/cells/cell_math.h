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
template <class T> FLASHRNN_HD T clamp_(T x, T lo, T hi) { return min_(max_(x, lo), hi); }

template <class T> FLASHRNN_HD T sigmoid(T x) { return T(1) / (T(1) + exp_(-x)); }

// log σ(x) = min(x, 0) − log(1 + e^{−|x|}): finite for every finite x.
template <class T> FLASHRNN_HD T log_sigmoid(T x) {
  const T abs_x = x < T(0) ? -x : x;
  return min_(x, T(0)) - log1p_(exp_(-abs_x));
}

}  // namespace flashrnn::cells

// sLSTM cell (xLSTM; CELLS.md): exponential input gate, forget gate in log space,
// normaliser n and stabiliser m. States h, c, n, m.
#pragma once

#include "cells/cell_math.h"

namespace flashrnn::cells {

struct Slstm {
  static constexpr const char* kName = "slstm";
  static constexpr int kGates = 4;   // i, f, z, o
  static constexpr int kBiases = 4;
  static constexpr int kStates = 4;  // h, c, n, m
  static constexpr int kCache = 4;   // ±e (i' and f', see forward), z, o, σ(f̃)
  static constexpr unsigned kStatesReadBack = 0b0110;  // states backward() reads (bit s): c and n
  static constexpr bool kDrhIsDwx = true;  // backward()'s drh equals dwx: the fused backward stores one value to both

  template <class T, class M = PreciseMath>
  FLASHRNN_HD static void forward(const T* wx, const T* rh, const T* bias, const T* s_prev,
                                  T* s_next, T* cache) {
    const T i_pre = wx[0] + rh[0] + bias[0];
    const T f_pre = wx[1] + rh[1] + bias[1];
    const T z = M::tanh(wx[2] + rh[2] + bias[2]);
    const T o = M::sigmoid(wx[3] + rh[3] + bias[3]);
    const T c_prev = s_prev[1], n_prev = s_prev[2], m_prev = s_prev[3];
    const T log_f_m = M::log_sigmoid(f_pre) + m_prev;
    // m = max(ĩ, log f + m_prev), or ĩ while n == 0 (only before the first
    // step): i' = exp(ĩ - m) and f' = min(exp(log f + m_prev - m), 1). One of
    // the two is exp(0) = 1 (or the clamp's 1) and the other exp(-|ĩ - (log f
    // + m_prev)|): one exponential, the same values.
    const bool forget_larger = log_f_m > i_pre, forget_is_m = forget_larger && n_prev != T(0);
    const T m = forget_is_m ? log_f_m : i_pre;
    const T e = min_(M::exp(forget_larger ? i_pre - log_f_m : log_f_m - i_pre), T(1));  // the clamp: rounding
    const T i_gate = forget_is_m ? e : T(1);
    const T f_gate = forget_larger ? T(1) : e;
    const T c = f_gate * c_prev + i_gate * z;
    const T n = max_(T(1), f_gate * n_prev + i_gate);
    s_next[0] = M::divide(o * c, n);
    s_next[1] = c;
    s_next[2] = n;
    s_next[3] = m;
    // The two gates in one value: e, negated (-0 for 0 too) where the forget
    // term is the larger; with n_prev (a state the backward reads) that gives
    // both back exactly (gates()).
    cache[0] = forget_larger ? -e : e;
    cache[1] = z;
    cache[2] = o;
    cache[3] = M::sigmoid(f_pre);
  }

  // i' and f' from the cache's first value and n_{t-1}.
  template <class T>
  FLASHRNN_HD static void gates(T encoded, T n_prev, T& i_gate, T& f_gate) {
    const bool forget_larger = signbit(encoded);
    const T e = forget_larger ? -encoded : encoded;
    i_gate = forget_larger && n_prev != T(0) ? e : T(1);
    f_gate = forget_larger ? T(1) : e;
  }

  // m is treated as a constant and the clamp of n as the identity (as the original).
  template <class T, class M = PreciseMath>
  FLASHRNN_HD static void backward(const T* cache, const T* s_prev, const T* s_next, const T* ds,
                                   T* dwx, T* drh, T* db, T* ds_prev) {
    T i_gate, f_gate;
    gates(cache[0], s_prev[2], i_gate, f_gate);
    const T z = cache[1], o = cache[2], sig_f = cache[3];
    const T c = s_next[1], n = s_next[2];
    const T h = M::divide(o * c, n);  // recomputed: the stored h may have been forward-clipped
    const T dh = ds[0];
    const T u = M::divide(dh, n);
    const T dc = ds[1] + o * u;
    const T dn = ds[2] - h * u;
    const T d[4] = {i_gate * (z * dc + dn),
                    f_gate * (s_prev[1] * dc + s_prev[2] * dn) * (T(1) - sig_f),
                    (T(1) - z * z) * i_gate * dc, (T(1) - o) * h * dh};
    for (int k = 0; k < 4; ++k) dwx[k] = drh[k] = db[k] = d[k];
    ds_prev[0] = T(0);
    ds_prev[1] = f_gate * dc;
    ds_prev[2] = f_gate * dn;
    ds_prev[3] = T(0);
  }
};

}  // namespace flashrnn::cells

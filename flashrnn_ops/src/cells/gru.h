// GRU cell, PyTorch/cuDNN convention (CELLS.md): the reset gate multiplies the
// recurrent term after the matmul. Gate slots r, z, n; biases r, z, n_input,
// n_recurrent; one state h.
#pragma once

#include "cells/cell_math.h"

namespace flashrnn::cells {

struct Gru {
  static constexpr const char* kName = "gru";
  static constexpr int kGates = 3;   // r, z, n
  static constexpr int kBiases = 4;  // r, z, n_input, n_recurrent
  static constexpr int kStates = 1;  // h
  static constexpr int kCache = 4;   // r, z, n, R_n·h + b_hn
  static constexpr unsigned kStatesReadBack = 0b1;  // states backward() reads (bit s): h
  static constexpr bool kDrhIsDwx = false;  // drh of the candidate n is dwx scaled by r

  template <class T, class M = PreciseMath>
  FLASHRNN_HD static void forward(const T* wx, const T* rh, const T* bias, const T* s_prev,
                                  T* s_next, T* cache) {
    const T r = M::sigmoid(wx[0] + rh[0] + bias[0]);
    const T z = M::sigmoid(wx[1] + rh[1] + bias[1]);
    const T n_rec = rh[2] + bias[3];
    const T n = M::tanh(wx[2] + bias[2] + r * n_rec);
    s_next[0] = (T(1) - z) * n + z * s_prev[0];
    cache[0] = r;
    cache[1] = z;
    cache[2] = n;
    cache[3] = n_rec;
  }

  template <class T, class M = PreciseMath>
  FLASHRNN_HD static void backward(const T* cache, const T* s_prev, const T* s_next, const T* ds,
                                   T* dwx, T* drh, T* db, T* ds_prev) {
    const T r = cache[0], z = cache[1], n = cache[2], n_rec = cache[3];
    const T dh = ds[0];
    const T dn_pre = dh * (T(1) - z) * (T(1) - n * n);
    const T dz_pre = dh * (s_prev[0] - n) * z * (T(1) - z);
    const T dr_pre = dn_pre * n_rec * r * (T(1) - r);
    dwx[0] = drh[0] = db[0] = dr_pre;
    dwx[1] = drh[1] = db[1] = dz_pre;
    dwx[2] = db[2] = dn_pre;
    drh[2] = db[3] = dn_pre * r;
    ds_prev[0] = dh * z;
  }
};

}  // namespace flashrnn::cells

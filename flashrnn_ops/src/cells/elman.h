// Elman cell (CELLS.md): h_t = tanh(x_t + R h_{t-1} + b).
#pragma once

#include "cells/cell_math.h"

namespace flashrnn::cells {

struct Elman {
  static constexpr const char* kName = "elman";
  static constexpr int kGates = 1;
  static constexpr int kBiases = 1;
  static constexpr int kStates = 1;  // h
  static constexpr int kCache = 1;   // h_t before any forward clip
  static constexpr unsigned kStatesReadBack = 0;  // states backward() reads (bit s): none: the cache holds h
  static constexpr bool kDrhIsDwx = true;  // backward()'s drh equals dwx: the fused backward stores one value to both

  template <class T, class M = PreciseMath>
  FLASHRNN_HD static void forward(const T* wx, const T* rh, const T* bias, const T* s_prev,
                                  T* s_next, T* cache) {
    s_next[0] = cache[0] = M::tanh(wx[0] + rh[0] + bias[0]);
  }

  template <class T, class M = PreciseMath>
  FLASHRNN_HD static void backward(const T* cache, const T* s_prev, const T* s_next, const T* ds,
                                   T* dwx, T* drh, T* db, T* ds_prev) {
    const T h = cache[0];
    dwx[0] = drh[0] = db[0] = ds[0] * (T(1) - h * h);
    ds_prev[0] = T(0);
  }
};

}  // namespace flashrnn::cells

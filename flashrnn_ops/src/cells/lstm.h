// LSTM cell (CELLS.md): gates i, f, z, o; states h, c.
#pragma once

#include "cells/cell_math.h"

namespace flashrnn::cells {

struct Lstm {
  static constexpr const char* kName = "lstm";
  static constexpr int kGates = 4;   // slots of Wx and R: i, f, z, o
  static constexpr int kBiases = 4;  // slots of b
  static constexpr int kStates = 2;  // h, c
  static constexpr int kCache = 4;   // activated gates i, f, z, o
  static constexpr unsigned kStatesReadBack = 0b10;  // states backward() reads (bit s): c
  static constexpr bool kDrhIsDwx = true;  // backward()'s drh equals dwx: the fused backward stores one value to both

  // wx: input pre-activations, rh: R·h_{t-1}, bias: b (one value per slot).
  template <class T, class M = PreciseMath>
  FLASHRNN_HD static void forward(const T* wx, const T* rh, const T* bias, const T* s_prev,
                                  T* s_next, T* cache) {
    const T i = M::sigmoid(wx[0] + rh[0] + bias[0]);
    const T f = M::sigmoid(wx[1] + rh[1] + bias[1]);
    const T z = M::tanh(wx[2] + rh[2] + bias[2]);
    const T o = M::sigmoid(wx[3] + rh[3] + bias[3]);
    const T c = f * s_prev[1] + i * z;
    s_next[0] = o * M::tanh(c);
    s_next[1] = c;
    cache[0] = i;
    cache[1] = f;
    cache[2] = z;
    cache[3] = o;
  }

  // ds: total gradient of the states after this step. Writes the gradients of the
  // input pre-activations (dwx), of R·h (drh), of the biases (db) and the part of
  // the previous states' gradient that does not pass through R (ds_prev).
  template <class T, class M = PreciseMath>
  FLASHRNN_HD static void backward(const T* cache, const T* s_prev, const T* s_next, const T* ds,
                                   T* dwx, T* drh, T* db, T* ds_prev) {
    const T i = cache[0], f = cache[1], z = cache[2], o = cache[3];
    const T tanh_c = M::tanh(s_next[1]);
    const T dh = ds[0];
    const T dc = ds[1] + dh * o * (T(1) - tanh_c * tanh_c);
    const T d[4] = {dc * z * i * (T(1) - i), dc * s_prev[1] * f * (T(1) - f),
                    dc * i * (T(1) - z * z), dh * tanh_c * o * (T(1) - o)};
    for (int k = 0; k < 4; ++k) dwx[k] = drh[k] = db[k] = d[k];
    ds_prev[0] = T(0);
    ds_prev[1] = dc * f;
  }
};

}  // namespace flashrnn::cells

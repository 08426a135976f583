// The pointwise half of one time step, as plain parameter structs and a
// per-element function templated on the cell. No torch: the CPU loop
// (pointwise_cpu.cpp) and the CUDA kernels (pointwise_cuda.cu) both call it.
//
// Every per-step array is laid out [B, slots, ND] (ND = heads × head dim) with
// its own batch stride, so slices of the user's [B, T, G, N, D] tensors are
// used in place.
#pragma once

#include <cstdint>

#include "cells/cell_math.h"

namespace flashrnn {

template <class T>
struct Slots {
  T* ptr = nullptr;
  int64_t batch_stride = 0;  // elements between batch rows; slot stride is ND

  FLASHRNN_HD T& at(int64_t b, int k, int64_t j, int64_t nd) const {
    return ptr[b * batch_stride + k * nd + j];
  }
};

template <class T>
struct PointwiseForwardParams {
  int64_t batch = 0;
  int64_t nd = 0;
  Slots<const T> wx;      // [B, Gx, ND]  input pre-activations of this step
  Slots<const T> rh;      // [B, Gx, ND]  R·h_{t-1}
  const T* bias = nullptr;  // [Gb, ND]
  Slots<const T> s_prev;  // [B, S, ND]
  Slots<T> s_next;        // [B, S, ND]
  Slots<T> cache;         // [B, C, ND]   what the cell's backward needs
  T forward_clip = 0;     // > 0: clamp h_t
};

template <class T>
struct PointwiseBackwardParams {
  int64_t batch = 0;
  int64_t nd = 0;
  Slots<const T> cache;   // [B, C, ND]
  Slots<const T> s_prev;  // [B, S, ND]
  Slots<const T> s_next;  // [B, S, ND]
  Slots<const T> ds;      // [B, S, ND]  total gradient of s_next
  Slots<T> dwx;           // [B, Gx, ND]
  Slots<T> drh;           // [B, Gx, ND]
  Slots<T> db;            // [B, Gb, ND] per batch row; the caller sums over B
  Slots<T> ds_prev;       // [B, S, ND]  gradient of s_prev not passing through R
};

// One element e ∈ [0, B·ND) of the forward step.
template <class Cell, class T>
FLASHRNN_HD void pointwise_forward_element(const PointwiseForwardParams<T>& p, int64_t e) {
  const int64_t b = e / p.nd, j = e % p.nd;
  T wx[Cell::kGates], rh[Cell::kGates], bias[Cell::kBiases];
  T s_prev[Cell::kStates], s_next[Cell::kStates], cache[Cell::kCache];
  for (int k = 0; k < Cell::kGates; ++k) {
    wx[k] = p.wx.at(b, k, j, p.nd);
    rh[k] = p.rh.at(b, k, j, p.nd);
  }
  for (int k = 0; k < Cell::kBiases; ++k) bias[k] = p.bias[k * p.nd + j];
  for (int s = 0; s < Cell::kStates; ++s) s_prev[s] = p.s_prev.at(b, s, j, p.nd);
  Cell::forward(wx, rh, bias, s_prev, s_next, cache);
  if (p.forward_clip > T(0)) s_next[0] = cells::clamp_(s_next[0], -p.forward_clip, p.forward_clip);
  for (int s = 0; s < Cell::kStates; ++s) p.s_next.at(b, s, j, p.nd) = s_next[s];
  for (int c = 0; c < Cell::kCache; ++c) p.cache.at(b, c, j, p.nd) = cache[c];
}

// One element e ∈ [0, B·ND) of the backward step.
template <class Cell, class T>
FLASHRNN_HD void pointwise_backward_element(const PointwiseBackwardParams<T>& p, int64_t e) {
  const int64_t b = e / p.nd, j = e % p.nd;
  T cache[Cell::kCache], s_prev[Cell::kStates], s_next[Cell::kStates], ds[Cell::kStates];
  T dwx[Cell::kGates], drh[Cell::kGates], db[Cell::kBiases], ds_prev[Cell::kStates];
  for (int c = 0; c < Cell::kCache; ++c) cache[c] = p.cache.at(b, c, j, p.nd);
  for (int s = 0; s < Cell::kStates; ++s) {
    s_prev[s] = p.s_prev.at(b, s, j, p.nd);
    s_next[s] = p.s_next.at(b, s, j, p.nd);
    ds[s] = p.ds.at(b, s, j, p.nd);
  }
  Cell::backward(cache, s_prev, s_next, ds, dwx, drh, db, ds_prev);
  for (int k = 0; k < Cell::kGates; ++k) {
    p.dwx.at(b, k, j, p.nd) = dwx[k];
    p.drh.at(b, k, j, p.nd) = drh[k];
  }
  for (int k = 0; k < Cell::kBiases; ++k) p.db.at(b, k, j, p.nd) = db[k];
  for (int s = 0; s < Cell::kStates; ++s) p.ds_prev.at(b, s, j, p.nd) = ds_prev[s];
}

}  // namespace flashrnn

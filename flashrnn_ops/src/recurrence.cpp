#include "recurrence.h"

#include <ATen/ATen.h>

#include "cells/registry.h"
#include "cells/saved_states.h"

namespace flashrnn {

int cache_slots(Cell cell) {
  return cells::dispatch_cell(cell, [](auto c) { return decltype(c)::kCache; });
}

SavedStates saved_states(Cell cell) {
  return cells::dispatch_cell(cell, [](auto c) {
    constexpr unsigned read = decltype(c)::kStatesReadBack;  // one run of slots (cells::reads_state_back asserts it)
    return SavedStates{cells::first_read_state(read), cells::read_state_count(read)};
  });
}

int output_states(const Problem& problem) {
  return problem.output_h_only ? 1 : cell_layout(problem.cell).states;
}

at::ScalarType compute_type(at::ScalarType input) {
  return input == at::kDouble ? at::kDouble : at::kFloat;
}

at::Tensor heads_major(const at::Tensor& r, at::ScalarType type) {
  const int64_t gates = r.size(0), heads = r.size(1), dim = r.size(2);
  return r.permute({1, 0, 2, 3}).reshape({heads, gates * dim, dim}).to(type).contiguous();
}

at::Tensor gates_major(const at::Tensor& r_heads, int64_t gates) {
  const int64_t heads = r_heads.size(0), dim = r_heads.size(2);
  return r_heads.view({heads, gates, dim, dim}).permute({1, 0, 2, 3}).contiguous();
}

at::Tensor initial_states_internal(const Inputs& in, int num_states, at::ScalarType type) {
  const at::Tensor& wx = in.wx;
  if (!in.initial_states.defined())
    return at::zeros({wx.size(0), num_states, wx.size(3), wx.size(4)}, wx.options().dtype(type));
  return in.initial_states.squeeze(2).permute({1, 0, 2, 3}).to(type).contiguous();
}

at::Tensor rows_contiguous(const at::Tensor& t) {
  return t.size(-1) == 1 || t.stride(-1) == 1 ? t : t.contiguous();
}

ForwardResult allocate_outputs(const Problem& problem, const Inputs& in) {
  const int64_t B = in.wx.size(0), steps = in.wx.size(1), N = in.wx.size(3), D = in.wx.size(4);
  const int num_states = cell_layout(problem.cell).states;
  ForwardResult out;
  out.states_all = at::empty({output_states(problem), B, steps, N, D}, in.wx.options());
  out.last_states = at::empty({num_states, B, 1, N, D}, in.wx.options());
  return out;
}

Saved allocate_forward(const Problem& problem, const Inputs& in, at::ScalarType compute,
                       at::ScalarType storage, bool per_step_buffers) {
  const int64_t B = in.wx.size(0), steps = in.wx.size(1), N = in.wx.size(3), D = in.wx.size(4);
  const int num_states = cell_layout(problem.cell).states;
  const auto c = in.wx.options().dtype(compute);
  Saved saved;
  saved.wx_type = in.wx.scalar_type();
  saved.r_type = in.r.scalar_type();
  saved.b_type = in.b.scalar_type();
  saved.biases = in.b.size(0);
  saved.r_heads = heads_major(in.r, storage);
  saved.s0 = initial_states_internal(in, num_states, compute);
  saved.reset = in.reset;
  const auto buffer = [&](at::IntArrayRef shape, const at::TensorOptions& o) {
    // Without per-step buffers: one row of D broadcast to the shape, so the
    // tensor still has a contiguous last dimension (what slots() views).
    return per_step_buffers ? at::empty(shape, o) : at::empty({shape.back()}, o).expand(shape);
  };
  saved.states = buffer({steps, B, saved_states(problem.cell).count, N, D}, c);
  saved.cache = buffer({steps, B, cache_slots(problem.cell), N, D}, c);
  saved.h_gemm = buffer({steps, B, N, D}, in.wx.options().dtype(storage));
  return saved;
}

BackwardTensors allocate_backward(const Saved& saved, const OutputGradients& grads,
                                  at::ScalarType storage, int64_t dh_rec_slots) {
  const int64_t steps = saved.states.size(0), B = saved.states.size(1);
  const int64_t N = saved.states.size(3), D = saved.states.size(4);
  const int64_t G = saved.r_heads.size(1) / D;
  const auto c = saved.states.options();
  const auto s = c.dtype(storage);
  const auto external = [&](const at::Tensor& g) {
    return g.defined() ? rows_contiguous(g.to(storage)) : at::Tensor();
  };
  BackwardTensors b;
  b.d_states = external(grads.d_states_all);
  b.d_last = external(grads.d_last);
  b.d_wx = at::empty({B, steps, G, N, D}, s);
  b.d_rh = at::empty({N, steps, B, G, D}, s);
  b.d_bias = at::zeros({B, saved.biases, N, D}, c);
  b.d_s0 = at::zeros_like(saved.s0);
  b.carry = at::empty_like(saved.s0);
  b.dh_rec = at::empty({N, dh_rec_slots, B, D}, c);
  return b;
}

at::Tensor recurrent_weight_gradient(const Saved& saved, const at::Tensor& d_rh) {
  const int64_t N = d_rh.size(0), rows = d_rh.size(1) * d_rh.size(2);
  const int64_t G = d_rh.size(3), D = d_rh.size(4);
  // fp32 accumulation inside the GEMM; the result is rounded once.
  const at::Tensor d_r_heads = at::bmm(d_rh.view({N, rows, G * D}).transpose(1, 2),
                                       saved.h_gemm.view({rows, N, D}).transpose(0, 1));
  return gates_major(d_r_heads, G).to(saved.r_type);
}

}  // namespace flashrnn

// flashrnn: the recurrent op. The contract (shapes, equations, options) is
// docs/CELLS.md; every backend computes exactly those functions.
//
//   auto [states_all, last_states] = flashrnn::flashrnn(Wx, R, b, initial_states, options);
//
//   Wx [B, T, Gx, N, D]   input pre-activations (the caller's input projection applied)
//   R  [Gx, N, D, D]      recurrent matrices, R[g, n] is out × in
//   b  [Gb, N, D]         biases
//   initial_states [S, B, 1, N, D] or nullopt (zeros)
//   -> states_all  [S, B, T, N, D]  states after steps 1..T (state 0 is h);
//                  [1, B, T, N, D]  h alone with options.output_h_only
//      last_states [S, B, 1, N, D]  every state after step T
//
// Gradients flow to Wx, R, b and the initial states through torch autograd.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <ATen/Tensor.h>

#include "flashrnn/cell_list.h"

namespace flashrnn {

// lstm, slstm, gru, elman (flashrnn/cell_list.h; docs/CELLS.md).
enum class Cell { FLASHRNN_FOR_EACH_CELL(FLASHRNN_CELL_ENUMERATOR, _) };

// vanilla: torch ops in a time loop (CPU and CUDA), the reference.
// alternating: per step one GEMM + one fused pointwise kernel (CUDA).
// fused: one persistent kernel for all steps (CUDA).
// auto: the fastest backend that supports the case.
enum class Backend { kVanilla, kAlternating, kFused, kAuto };

// Slot and state counts of a cell: Wx and R have `gates` slots, b has `biases`.
struct CellLayout {
  int gates;
  int biases;
  int states;
};

CellLayout cell_layout(Cell cell);

std::string_view to_string(Cell cell);
std::string_view to_string(Backend backend);
// Parse "lstm" / "slstm" / "gru" / "elman"; throws InputError listing the choices.
Cell parse_cell(std::string_view name);
// Parse "vanilla" / "alternating" / "fused" / "auto".
Backend parse_backend(std::string_view name);

struct Options {
  Cell cell = Cell::kLstm;
  Backend backend = Backend::kAuto;
  // Drop the gradient that flows from step t+1 back into h_t through R; the
  // gradient still flows through the cell's direct paths (c, n; GRU's z·h).
  bool gradient_recurrent_cut = false;
  // > 0: clamp that recurrent gradient (Σ_k R_kᵀ δg̃_k) to [−clip, clip].
  double gradient_recurrent_clip = 0.0;
  // > 0: clamp h_t to [−clip, clip] before it is stored and fed back. The
  // backward passes gradients through the clamp unchanged (straight-through).
  double forward_clip = 0.0;
  // Optional bool [B, T]: where set, step t starts from the initial states
  // instead of the states of step t−1 (packed documents).
  std::optional<at::Tensor> reset_mask;
  // Keep only the inputs for the backward, not the per-step states and gate
  // values: the backward runs the forward again first. Less memory (for the
  // sLSTM in bf16, 40 bytes a unit and step less, 8 more for Wx) for one more
  // forward; the gradients are the same.
  bool recompute = false;
  // states_all holds h alone, [1, B, T, N, D]: for a layer that reads only h
  // (an LSTM's c, an sLSTM's c, n, m are then neither written per step nor
  // kept, nor their zero gradients read). last_states still holds every state.
  bool output_h_only = false;
};

struct Result {
  at::Tensor states_all;   // [S, B, T, N, D], or [1, B, T, N, D] with output_h_only
  at::Tensor last_states;  // [S, B, 1, N, D]
};

// Malformed input: the message names the tensor, its shape and the expected one.
class InputError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

Result flashrnn(const at::Tensor& Wx, const at::Tensor& R, const at::Tensor& b,
                const std::optional<at::Tensor>& initial_states, const Options& options = {});

}  // namespace flashrnn

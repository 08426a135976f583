// The mixer of the LSTM, GRU and Elman blocks: input projection to the cell's
// gates with N heads, the recurrent op (flashrnn::flashrnn), output projection.
// In a plain model (BlockContext::structure kPlain) it is the whole layer and
// has no output projection: its output is h over the heads, N*D = d_model wide.
#pragma once

#include <torch/nn/modules/linear.h>

#include "flashrnn/flashrnn.h"
#include "flashtrain/models/headwise_linear.h"
#include "flashtrain/models/mixer.h"
#include "flashtrain/models/options.h"

namespace flashtrain::models {

// Parameters (G gate slots and Gb bias slots of the cell, see cell_layout):
//   "wx.weight"        dense [G*N*D, d_model], or block-diagonal [N, G*D, d_model/N]
//   "r"                [G, N, D, D]   the recurrent matrices
//   "b"                [Gb, N, D]     the cell's biases
//   "out_proj.weight"  [d_model, N*D]   (not in a plain model)
// State: "states" [B, S, N, D].
class RecurrentMixer : public Mixer {
 public:
  // cell: lstm, gru or elman (the sLSTM has its own mixer).
  RecurrentMixer(flashrnn::Cell cell, const BlockContext& context,
                 const RecurrentBlockOptions& options);

  torch::Tensor forward(const torch::Tensor& x) override;
  StepOutput forward_step(const torch::Tensor& x_t, const BlockState& state) override;
  // One call of the op over the chunk, from the state.
  ChunkOutput forward_chunk(const torch::Tensor& x, const BlockState& state) override;
  BlockState initial_state(int64_t batch, const torch::TensorOptions& options) const override;
  double forward_flops_per_token(int64_t context) const override;

 private:
  // [B, T, d_model] -> Wx [B, T, G, N, D].
  torch::Tensor gate_inputs(const torch::Tensor& x);
  flashrnn::Options op_options() const;
  // h [.., N*D] -> the mixer's output: out_proj(h), or h itself when plain.
  torch::Tensor output(const torch::Tensor& h);

  flashrnn::Cell cell_;
  flashrnn::CellLayout layout_;
  int64_t d_model_, num_heads_, head_dim_;
  bool block_diagonal_;
  bool plain_;
  flashrnn::Backend backend_;
  bool recompute_;
  torch::nn::Linear wx_dense_{nullptr};
  HeadwiseLinear wx_headwise_{nullptr};
  torch::Tensor r_, b_;
  torch::nn::Linear out_proj_{nullptr};
};

}  // namespace flashtrain::models

// Private: the blocks run as a wavefront over time chunks. Block l on chunk k
// needs block l-1's output on chunk k and its own state after chunk k-1, so
// every (l, k) with l + k = s can run at once: L blocks over K chunks take
// L + K - 1 waves instead of one block after another over the whole sequence.
// On a GPU each block runs on a stream of its own, forked from the caller's
// and joined back to it; the backward, which autograd runs on each op's
// forward stream, is the same wavefront mirrored. Where few sequences are in
// flight (long context, small micro-batches) a recurrent block fills few SMs,
// and the blocks side by side fill more. Exact: what forward over the whole
// sequence gives (each chunk continues from the state the previous one left).
#pragma once

#include <torch/torch.h>

#include <vector>

#include "flashtrain/models/residual_block.h"

namespace flashtrain::models {

struct WavefrontOutput {
  torch::Tensor y;                 // [B, T, d_model]
  std::vector<BlockState> states;  // each block's state after the last chunk
};

// x [B, T, d_model] through `blocks` in `chunks` chunks of time (fewer where T
// is shorter); each block starts from its entry of `initial`, or where that is
// empty from its initial state, made with `state_options` (the parameters'
// device and dtype).
WavefrontOutput run_wavefront(std::vector<ResidualBlock>& blocks, const torch::Tensor& x, int64_t chunks,
                              const torch::TensorOptions& state_options,
                              const std::vector<BlockState>& initial = {});

}  // namespace flashtrain::models

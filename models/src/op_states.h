// The step-by-step state of the recurrent mixers in the op's layout and back.
//
// The mixers pass R, b and the initial states to flashrnn::flashrnn as they
// are: under autocast the input projection yields bf16/fp16 Wx while the
// parameters stay float32 (autocast does not reach custom ops), and the op
// takes float32 R, b and initial states beside half-precision Wx
// (docs/CELLS.md, "Precision"). The op returns states in Wx's dtype;
// carried_states() puts them back into the dtype of the state that came in, so
// a float32 state stays float32 from token to token.
#pragma once

#include <torch/torch.h>

#include "flashrnn/flashrnn.h"

namespace flashtrain::models {

// [B, S, N, D] (batch first, ours) -> [S, B, 1, N, D] (the op's initial states).
inline torch::Tensor op_initial_states(const torch::Tensor& states) {
  return states.transpose(0, 1).unsqueeze(2);
}

// The op's last states [S, B, 1, N, D] -> [B, S, N, D] in previous's dtype.
inline torch::Tensor carried_states(const flashrnn::Result& result, const torch::Tensor& previous) {
  return result.last_states.squeeze(2).transpose(0, 1).to(previous.scalar_type());
}

}  // namespace flashtrain::models

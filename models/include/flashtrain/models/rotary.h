// Rotary position embedding (RoPE) in the half-split layout of GPT-NeoX and
// Hugging Face Llama: unit i is paired with unit i + head_dim/2.
#pragma once

#include <ATen/Tensor.h>

namespace flashtrain::models {

// x [B, T, H, head_dim] holding positions first_position .. first_position+T-1.
// Pair (x1, x2) at position p is rotated by the angle p * theta^(-2i/head_dim):
// (x1 cos - x2 sin, x2 cos + x1 sin). Angles are computed in float64, so a token
// gets the same rotation in a full sequence and in a single step.
at::Tensor apply_rotary(const at::Tensor& x, int64_t first_position, double theta);

}  // namespace flashtrain::models

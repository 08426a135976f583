// What a block carries from one token to the next when it runs step by step.
#pragma once

#include <ATen/Tensor.h>

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace flashtrain::models {

// Named tensors, batch in dimension 0 of every one (so a sampler can reorder or
// select rows of any block's state alike). Each mixer documents its entries:
//   lstm/gru/elman  "states" [B, S, N, D]          the cell's S states
//   slstm           "states" [B, 4, N, D], "conv_window" [B, K-1, d_model]
//   linear_scan     "x" [B, H]
//   transformer     "keys", "values" [B, heads, tokens so far, head_dim]
// Everything but the transformer's KV cache has a fixed size: O(1) per token.
using BlockState = std::map<std::string, at::Tensor>;

// One block step: the output for this token and the state after it.
struct StepOutput {
  at::Tensor y;  // [B, d_model]
  BlockState state;
};

// A chunk of tokens: the outputs for each and the state after the last.
struct ChunkOutput {
  at::Tensor y;  // [B, T, d_model]
  BlockState state;
};

// state[key], checked: a missing entry or a shape other than `expected` (where
// an expected size of -1 matches any) is an InputError that starts with `block`
// (e.g. "lstm block") and names `key`.
const at::Tensor& state_entry(const BlockState& state, const std::string& key,
                              const std::vector<int64_t>& expected, std::string_view block);

}  // namespace flashtrain::models

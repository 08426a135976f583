// Token embeddings, weight[tokens], with a gradient that suits small vocabularies.
#pragma once

#include <torch/types.h>

namespace flashtrain::models {

// Vocabularies up to this size take the one-hot gradient below.
constexpr int64_t kOneHotGradientVocab = 256;

// weight [V, d] looked up at tokens [...] -> [..., d] (ATen's embedding, with
// its device-side check of the ids). For V <= kOneHotGradientVocab the weight's
// gradient is one GEMM, one_hot(tokens)ᵀ · dY, instead of ATen's embedding
// backward, which sorts the ids first (about ten small kernels: ~45 µs of a
// 1 ms state-tracking step on one H200). Both are deterministic.
torch::Tensor embed_tokens(const torch::Tensor& weight, const torch::Tensor& tokens);

}  // namespace flashtrain::models

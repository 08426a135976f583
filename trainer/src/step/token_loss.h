// Private: the language-model loss as every part of the trainer computes it —
// the forward under bf16 autocast when asked, then the cross-entropy summed
// over the scored targets (data::kIgnoreTarget skipped) from float32 logits.
// The training step (eager and graphed), evaluation and the micro-batch probe
// all use these, so they measure the same thing.
#pragma once

#include <torch/torch.h>

#include "step/autocast_scope.h"
#include "flashtrain/data/tasks.h"
#include "flashtrain/models/language_model.h"

namespace flashtrain::trainer {

// [B, T] token ids -> [B, T, vocab] logits.
inline torch::Tensor forward_logits(models::LanguageModelImpl& model, const torch::Tensor& inputs, bool bf16) {
  AutocastScope autocast(inputs.device().type(), bf16);
  return model.forward(inputs);
}

// Σ over targets != kIgnoreTarget of −log softmax(logits)[target], a float32 scalar.
inline torch::Tensor summed_token_loss(const torch::Tensor& logits, const torch::Tensor& targets) {
  return torch::nn::functional::cross_entropy(
      logits.reshape({-1, logits.size(-1)}).to(torch::kFloat), targets.reshape(-1),
      torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum).ignore_index(data::kIgnoreTarget));
}

}  // namespace flashtrain::trainer

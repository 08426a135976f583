// Validation: mean loss per scored token and perplexity over a fixed number
// of batches, and for state-tracking tasks the accuracy on the scored tokens
// (the answers) and its chance-corrected form, scaled accuracy.
#pragma once

#include <cstdint>
#include <optional>

#include "flashtrain/models/language_model.h"
#include "flashtrain/trainer/batch_source.h"

namespace flashtrain::trainer {

struct EvalOptions {
  std::int64_t batches = 1;
  bool bf16 = false;      // autocast, as in training
  int num_classes = 0;    // > 0 (tasks): also score accuracy with this many answer classes
};

struct EvalResult {
  double loss = 0.0;        // mean cross-entropy per scored token (nats)
  double perplexity = 0.0;  // exp(loss)
  std::int64_t scored_tokens = 0;
  std::int64_t batches = 0;
  std::optional<double> accuracy;         // tasks: fraction of scored tokens predicted exactly
  std::optional<double> scaled_accuracy;  // tasks: (accuracy - 1/C) / (1 - 1/C)
  std::optional<double> sequence_accuracy;
};

// Runs the model in eval mode without gradients, then returns it to train mode.
EvalResult evaluate(models::LanguageModelImpl& model, BatchSource& batches, const EvalOptions& options);

}  // namespace flashtrain::trainer

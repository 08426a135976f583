// Validation: mean loss per scored token and perplexity over a fixed number
// of batches, and for state-tracking tasks the accuracy on the scored tokens
// (the answers) and its chance-corrected form, scaled accuracy. A task's
// prediction is the answer token of highest logit (the papers' rule: the
// model chooses among the answers, never a token that cannot be one). Data-parallel
// ranks each evaluate their own slice (evaluate_sums), add their sums over
// ranks, and summarize the total: the result is that of one process
// evaluating every slice.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "flashtrain/data/task_metrics.h"
#include "flashtrain/models/language_model.h"
#include "flashtrain/trainer/batch/batch_source.h"

namespace flashtrain::trainer {

struct EvalOptions {
  std::int64_t batches = 1;
  bool bf16 = false;      // autocast, as in training
  // Tasks: the answer tokens (Vocabulary::classes); accuracy is scored over
  // them. Empty for language modelling.
  std::vector<std::int32_t> answer_tokens;
  // Called after each batch with (batches done, batches in all), e.g. for a
  // progress line; may be empty.
  std::function<void(std::int64_t, std::int64_t)> on_batch;
};

struct EvalResult {
  double loss = 0.0;        // mean cross-entropy per scored token (nats)
  double perplexity = 0.0;  // exp(loss)
  std::int64_t scored_tokens = 0;
  std::int64_t batches = 0;
  std::optional<double> accuracy;         // tasks: fraction of scored tokens predicted exactly
  std::optional<double> scaled_accuracy;  // tasks: (accuracy - 1/C) / (1 - 1/C)
  std::optional<double> sequence_accuracy;
  // Tasks: (length, correct, total) for each sequence length that occurred,
  // shortest first; a sequence is correct when every scored target in it is
  // (answer-last tasks: its answer).
  std::vector<std::array<std::int64_t, 3>> answers_by_length;
};

// What a set of batches adds up to; sums over ranks add field by field.
struct EvalSums {
  double loss_sum = 0.0;  // cross-entropy summed over the scored tokens (nats)
  std::int64_t scored_tokens = 0;
  std::int64_t batches = 0;
  data::AccuracyCounts counts;  // tasks only (EvalOptions::answer_tokens set)
  data::LengthCounts by_length;  // tasks only; lengths up to the validation context

  // For a sum over ranks: the 7 scalars above, then (correct, total) of each
  // length 0, 1, ... in by_length. Every rank evaluates batches of one context,
  // so every rank's vector has the same size and the sum keeps its layout;
  // from_values reads the number of lengths from the size.
  std::vector<double> to_values() const;
  // Throws std::invalid_argument for a size that is not 7 + 2 x lengths.
  static EvalSums from_values(const std::vector<double>& values);
};

// The prediction at every position of logits [..., V]: the token of
// answer_tokens (int64, on the logits' device) with the highest logit.
torch::Tensor answer_predictions(const torch::Tensor& logits, const torch::Tensor& answer_tokens);

// Runs the model in eval mode without gradients, then returns it to train mode.
EvalSums evaluate_sums(models::LanguageModelImpl& model, BatchSource& batches, const EvalOptions& options);

// Loss, perplexity and (num_classes > 0) accuracies of the sums; throws
// std::runtime_error if no token was scored.
EvalResult summarize(const EvalSums& sums, int num_classes);

// [[length, correct, total], ...] of result.answers_by_length, for the JSON
// record of a validation; empty for language modelling.
nlohmann::json answers_by_length_json(const EvalResult& result);

// evaluate_sums, then summarize: one process.
EvalResult evaluate(models::LanguageModelImpl& model, BatchSource& batches, const EvalOptions& options);

}  // namespace flashtrain::trainer

#include "flashtrain/trainer/run/evaluator.h"

#include <torch/torch.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "step/token_loss.h"
#include "flashtrain/data/task_metrics.h"
#include "flashtrain/data/tasks.h"

namespace flashtrain::trainer {

torch::Tensor answer_predictions(const torch::Tensor& logits, const torch::Tensor& answer_tokens) {
  return answer_tokens.index({logits.index_select(-1, answer_tokens).argmax(-1)});
}

EvalSums evaluate_sums(models::LanguageModelImpl& model, BatchSource& batches, const EvalOptions& options) {
  if (options.batches < 1) throw std::invalid_argument("evaluate: batches must be >= 1");
  const bool was_training = model.is_training();
  model.eval();
  torch::NoGradGuard no_grad;

  torch::Tensor loss_sum = torch::zeros({}, torch::TensorOptions(torch::kDouble).device(model.parameters().front().device()));
  EvalSums sums;
  const bool scores_answers = !options.answer_tokens.empty();
  torch::Tensor answer_ids;
  if (scores_answers)
    answer_ids = torch::tensor(std::vector<std::int64_t>(options.answer_tokens.begin(), options.answer_tokens.end()))
                     .to(loss_sum.device());
  for (std::int64_t i = 0; i < options.batches; ++i) {
    const Batch batch = batches.next();
    const torch::Tensor logits = forward_logits(model, batch.inputs, options.bf16);
    loss_sum += summed_token_loss(logits, batch.targets).to(torch::kDouble);
    sums.scored_tokens += batch.scored_tokens;
    ++sums.batches;
    if (scores_answers) {
      const torch::Tensor predictions =
          answer_predictions(logits, answer_ids).to(torch::kCPU, torch::kInt32).contiguous();
      const torch::Tensor targets = batch.targets.to(torch::kCPU, torch::kInt32).contiguous();
      sums.counts += data::count_correct(predictions.data_ptr<std::int32_t>(), targets.data_ptr<std::int32_t>(),
                                         targets.size(0), targets.size(1));
      if (!batch.lengths.empty())
        sums.by_length += data::count_correct_by_length(predictions.data_ptr<std::int32_t>(),
                                                        targets.data_ptr<std::int32_t>(), batch.lengths.data(),
                                                        targets.size(0), targets.size(1));
    }
    if (options.on_batch) options.on_batch(i + 1, options.batches);
  }
  if (was_training) model.train();
  sums.loss_sum = loss_sum.item<double>();
  return sums;
}

namespace {

constexpr std::size_t kScalarValues = 7;  // the fields before by_length in to_values

}  // namespace

std::vector<double> EvalSums::to_values() const {
  std::vector<double> values = {loss_sum,
                                double(scored_tokens),
                                double(batches),
                                double(counts.correct_tokens),
                                double(counts.scored_tokens),
                                double(counts.correct_sequences),
                                double(counts.scored_sequences)};
  for (std::size_t length = 0; length < by_length.correct.size(); ++length) {
    values.push_back(double(by_length.correct[length]));
    values.push_back(double(by_length.total[length]));
  }
  return values;
}

EvalSums EvalSums::from_values(const std::vector<double>& values) {
  if (values.size() < kScalarValues || (values.size() - kScalarValues) % 2 != 0)
    throw std::invalid_argument("EvalSums::from_values: expected 7 values and a (correct, total) pair per "
                                "length, got " + std::to_string(values.size()) + " values");
  // Counts travel as doubles: exact below 2^53.
  const auto count = [&](std::size_t i) { return static_cast<std::int64_t>(std::llround(values[i])); };
  EvalSums sums;
  sums.loss_sum = values[0];
  sums.scored_tokens = count(1);
  sums.batches = count(2);
  sums.counts.correct_tokens = count(3);
  sums.counts.scored_tokens = count(4);
  sums.counts.correct_sequences = count(5);
  sums.counts.scored_sequences = count(6);
  for (std::size_t i = kScalarValues; i < values.size(); i += 2) {
    sums.by_length.correct.push_back(count(i));
    sums.by_length.total.push_back(count(i + 1));
  }
  return sums;
}

EvalResult summarize(const EvalSums& sums, int num_classes) {
  if (sums.scored_tokens == 0) throw std::runtime_error("evaluate: the validation batches have no scored tokens");
  EvalResult result;
  result.scored_tokens = sums.scored_tokens;
  result.batches = sums.batches;
  result.loss = sums.loss_sum / double(sums.scored_tokens);
  result.perplexity = std::exp(result.loss);
  if (num_classes > 0) {
    result.accuracy = sums.counts.token_accuracy();
    result.scaled_accuracy = data::scaled_accuracy(*result.accuracy, num_classes);
    result.sequence_accuracy = sums.counts.sequence_accuracy();
    for (std::size_t length = 0; length < sums.by_length.total.size(); ++length) {
      if (sums.by_length.total[length] == 0) continue;
      result.answers_by_length.push_back(
          {std::int64_t(length), sums.by_length.correct[length], sums.by_length.total[length]});
    }
  }
  return result;
}

nlohmann::json answers_by_length_json(const EvalResult& result) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& [length, correct, total] : result.answers_by_length) rows.push_back({length, correct, total});
  return rows;
}

EvalResult evaluate(models::LanguageModelImpl& model, BatchSource& batches, const EvalOptions& options) {
  return summarize(evaluate_sums(model, batches, options), int(options.answer_tokens.size()));
}

}  // namespace flashtrain::trainer

#include "flashtrain/trainer/evaluator.h"

#include <torch/torch.h>

#include <cmath>
#include <stdexcept>

#include "autocast_scope.h"
#include "flashtrain/data/task_metrics.h"
#include "flashtrain/data/tasks.h"

namespace flashtrain::trainer {

EvalResult evaluate(models::LanguageModelImpl& model, BatchSource& batches, const EvalOptions& options) {
  if (options.batches < 1) throw std::invalid_argument("evaluate: batches must be >= 1");
  const bool was_training = model.is_training();
  model.eval();
  torch::NoGradGuard no_grad;
  const auto device_type = model.parameters().front().device().type();

  torch::Tensor loss_sum = torch::zeros({}, torch::TensorOptions(torch::kDouble).device(model.parameters().front().device()));
  EvalResult result;
  data::AccuracyCounts counts;
  for (std::int64_t i = 0; i < options.batches; ++i) {
    const Batch batch = batches.next();
    torch::Tensor logits;
    {
      AutocastScope autocast(device_type, options.bf16);
      logits = model.forward(batch.inputs);
    }
    const std::int64_t vocab = logits.size(-1);
    loss_sum += torch::nn::functional::cross_entropy(
                    logits.reshape({-1, vocab}).to(torch::kFloat), batch.targets.reshape(-1),
                    torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum).ignore_index(data::kIgnoreTarget))
                    .to(torch::kDouble);
    result.scored_tokens += batch.scored_tokens;
    ++result.batches;
    if (options.num_classes > 0) {
      const torch::Tensor predictions = logits.argmax(-1).to(torch::kCPU, torch::kInt32).contiguous();
      const torch::Tensor targets = batch.targets.to(torch::kCPU, torch::kInt32).contiguous();
      counts += data::count_correct(predictions.data_ptr<std::int32_t>(), targets.data_ptr<std::int32_t>(),
                                    targets.size(0), targets.size(1));
    }
  }
  if (was_training) model.train();
  if (result.scored_tokens == 0) throw std::runtime_error("evaluate: the validation batches have no scored tokens");
  result.loss = loss_sum.item<double>() / double(result.scored_tokens);
  result.perplexity = std::exp(result.loss);
  if (options.num_classes > 0) {
    result.accuracy = counts.token_accuracy();
    result.scaled_accuracy = data::scaled_accuracy(*result.accuracy, options.num_classes);
    result.sequence_accuracy = counts.sequence_accuracy();
  }
  return result;
}

}  // namespace flashtrain::trainer

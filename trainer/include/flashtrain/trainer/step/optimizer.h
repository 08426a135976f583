// AdamW with a weight-decayed and an undecayed parameter group, gradient
// clipping, and the optimizer state as named tensors for checkpoints.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/optim/adamw.h>

#include "flashtrain/config/config.h"
#include "flashtrain/models/language_model.h"

namespace flashtrain::trainer {

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

// Group 0: the parameters models::takes_weight_decay() names (matrices) with
// optimizer.weight_decay; group 1: norms, biases, embeddings without decay.
// Betas and eps from [optimizer]; the learning rate is set every step.
std::unique_ptr<torch::optim::AdamW> make_adamw(models::LanguageModelImpl& model,
                                                const config::OptimizerConfig& options);

// Names of the parameters in each group, in group order (for the start-up report and tests).
std::vector<std::vector<std::string>> adamw_group_names(const models::LanguageModelImpl& model);

void set_learning_rate(torch::optim::Optimizer& optimizer, double lr);

// The global L2 norm of the gradients (parameters without one are skipped);
// if max_norm > 0 and the norm exceeds it, scales them down to max_norm.
// Returns the norm before clipping (NaN/Inf when a gradient is not finite,
// in which case nothing is scaled).
double clip_grad_norm(const std::vector<torch::Tensor>& parameters, double max_norm);

// AdamW's per-parameter state as "<name>.exp_avg", "<name>.exp_avg_sq" and
// "<name>.step" (int64 scalar), names from model.named_parameters();
// parameters not yet stepped have no entries.
NamedTensors adamw_state(const torch::optim::AdamW& optimizer, const models::LanguageModelImpl& model);

// The inverse of adamw_state. Throws std::runtime_error naming a tensor of the
// wrong shape or an entry that belongs to no parameter.
void load_adamw_state(torch::optim::AdamW& optimizer, const models::LanguageModelImpl& model,
                      const std::map<std::string, torch::Tensor>& state);

}  // namespace flashtrain::trainer

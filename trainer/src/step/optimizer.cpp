#include "flashtrain/trainer/step/optimizer.h"

#include <torch/torch.h>

#include <cmath>
#include <stdexcept>

#include "flashtrain/models/parameter_groups.h"

namespace flashtrain::trainer {
namespace {

const char* const kMomentNames[] = {".exp_avg", ".exp_avg_sq", ".step"};

}  // namespace

std::vector<std::vector<std::string>> adamw_group_names(const models::LanguageModelImpl& model) {
  std::vector<std::vector<std::string>> groups(2);
  for (const auto& item : model.named_parameters())
    groups[models::takes_weight_decay(item.key()) ? 0 : 1].push_back(item.key());
  return groups;
}

std::unique_ptr<torch::optim::AdamW> make_adamw(models::LanguageModelImpl& model,
                                                const config::OptimizerConfig& o) {
  torch::optim::AdamWOptions base(o.lr);
  base.betas({o.beta1, o.beta2}).eps(o.eps).weight_decay(0.0);
  std::vector<torch::Tensor> decayed, undecayed;
  for (const auto& item : model.named_parameters())
    (models::takes_weight_decay(item.key()) ? decayed : undecayed).push_back(item.value());
  std::vector<torch::optim::OptimizerParamGroup> groups;
  // Both groups always exist (possibly empty), so group indices are stable.
  auto decayed_options = std::make_unique<torch::optim::AdamWOptions>(base);
  decayed_options->weight_decay(o.weight_decay);
  groups.emplace_back(decayed, std::move(decayed_options));
  groups.emplace_back(undecayed, std::make_unique<torch::optim::AdamWOptions>(base));
  return std::make_unique<torch::optim::AdamW>(std::move(groups), base);
}

void set_learning_rate(torch::optim::Optimizer& optimizer, double lr) {
  for (torch::optim::OptimizerParamGroup& group : optimizer.param_groups()) group.options().set_lr(lr);
}

double clip_grad_norm(const std::vector<torch::Tensor>& parameters, double max_norm) {
  std::vector<torch::Tensor> grads, norms;
  for (const torch::Tensor& p : parameters) {
    if (!p.grad().defined()) continue;
    grads.push_back(p.grad());
    norms.push_back(p.grad().detach().to(torch::kFloat).norm(2));
  }
  if (grads.empty()) return 0.0;
  const double total = torch::stack(norms).norm(2).item<double>();  // one host sync per step
  if (max_norm > 0 && std::isfinite(total) && total > max_norm) {
    const double scale = max_norm / (total + 1e-6);
    torch::NoGradGuard no_grad;
    for (torch::Tensor& g : grads) g.mul_(scale);
  }
  return total;
}

NamedTensors adamw_state(const torch::optim::AdamW& optimizer, const models::LanguageModelImpl& model) {
  NamedTensors out;
  const auto& state = optimizer.state();
  for (const auto& item : model.named_parameters()) {
    const auto it = state.find(item.value().unsafeGetTensorImpl());
    if (it == state.end()) continue;
    const auto& s = static_cast<const torch::optim::AdamWParamState&>(*it->second);
    out.emplace_back(item.key() + kMomentNames[0], s.exp_avg());
    out.emplace_back(item.key() + kMomentNames[1], s.exp_avg_sq());
    out.emplace_back(item.key() + kMomentNames[2], torch::tensor(s.step(), torch::kLong));
  }
  return out;
}

void load_adamw_state(torch::optim::AdamW& optimizer, const models::LanguageModelImpl& model,
                      const std::map<std::string, torch::Tensor>& state) {
  std::size_t used = 0;
  auto& target = optimizer.state();
  target.clear();
  for (const auto& item : model.named_parameters()) {
    const std::string& name = item.key();
    const torch::Tensor& p = item.value();
    const auto avg = state.find(name + kMomentNames[0]);
    const auto avg_sq = state.find(name + kMomentNames[1]);
    const auto step = state.find(name + kMomentNames[2]);
    const int present = (avg != state.end()) + (avg_sq != state.end()) + (step != state.end());
    if (present == 0) continue;
    if (present != 3)
      throw std::runtime_error("optimizer state of " + name + " is incomplete (needs exp_avg, exp_avg_sq, step)");
    for (const auto& moment : {avg->second, avg_sq->second})
      if (moment.sizes() != p.sizes())
        throw std::runtime_error("optimizer state of " + name + " has shape " + c10::str(moment.sizes()) +
                                 "; the parameter has " + c10::str(p.sizes()));
    auto s = std::make_unique<torch::optim::AdamWParamState>();
    s->step(step->second.item<std::int64_t>());
    s->exp_avg(avg->second.to(p.device(), p.scalar_type()).clone());
    s->exp_avg_sq(avg_sq->second.to(p.device(), p.scalar_type()).clone());
    target[p.unsafeGetTensorImpl()] = std::move(s);
    used += 3;
  }
  if (used != state.size()) {
    for (const auto& [key, value] : state) {
      bool known = false;
      for (const char* suffix : kMomentNames) {
        const std::string s = suffix;
        if (key.size() > s.size() && key.compare(key.size() - s.size(), s.size(), s) == 0 &&
            model.named_parameters().contains(key.substr(0, key.size() - s.size())))
          known = true;
      }
      if (!known) throw std::runtime_error("optimizer state '" + key + "' belongs to no parameter of the model");
    }
  }
}

}  // namespace flashtrain::trainer

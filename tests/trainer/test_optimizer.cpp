#include <gtest/gtest.h>

#include <torch/torch.h>

#include <cmath>

#include "flashtrain/trainer/step/optimizer.h"

namespace flashtrain::trainer {
namespace {

models::LanguageModel tiny_model(bool tie = true) {
  models::LanguageModelOptions o;
  o.vocab_size = 16;
  o.model.dim = 8;
  models::set_layer_kinds(o.model, {models::BlockKind::kLstm, models::BlockKind::kSlstm});
  o.model.tie_embeddings = tie;
  o.model.n_heads = 2;
  o.model.backend = "vanilla";
  torch::manual_seed(0);
  return models::LanguageModel(o);
}

config::OptimizerConfig adamw_config(double lr = 0.1, double weight_decay = 0.5) {
  config::OptimizerConfig c;
  c.lr = lr;
  c.weight_decay = weight_decay;
  return c;
}

void backward_once(models::LanguageModel& model) {
  const torch::Tensor tokens = torch::arange(12, torch::kLong).remainder(16).view({2, 6});
  model->forward(tokens).pow(2).mean().backward();
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

TEST(Optimizer, GroupsDecayMatricesOnly) {
  models::LanguageModel model = tiny_model(/*tie=*/false);
  const auto groups = adamw_group_names(*model);
  ASSERT_EQ(groups.size(), 2u);
  for (const char* decayed : {"blocks.0.mixer.r", "blocks.0.mixer.wx.weight", "blocks.1.ffn.up.weight",
                              "blocks.1.mixer.conv.weight", "head.weight"})
    EXPECT_TRUE(contains(groups[0], decayed)) << decayed;
  for (const char* undecayed : {"embedding.weight", "blocks.0.mixer.b", "blocks.0.mixer_norm.weight",
                                "blocks.1.mixer.conv.bias", "blocks.1.mixer.group_norm.weight", "final_norm.weight"})
    EXPECT_TRUE(contains(groups[1], undecayed)) << undecayed;
  EXPECT_EQ(groups[0].size() + groups[1].size(), model->named_parameters().size());

  const auto optimizer = make_adamw(*model, adamw_config(0.1, 0.5));
  ASSERT_EQ(optimizer->param_groups().size(), 2u);
  const auto& decayed = static_cast<const torch::optim::AdamWOptions&>(optimizer->param_groups()[0].options());
  const auto& undecayed = static_cast<const torch::optim::AdamWOptions&>(optimizer->param_groups()[1].options());
  EXPECT_DOUBLE_EQ(decayed.weight_decay(), 0.5);
  EXPECT_DOUBLE_EQ(undecayed.weight_decay(), 0.0);
  EXPECT_DOUBLE_EQ(std::get<1>(decayed.betas()), 0.95);
}

// With zero gradients Adam's update is 0, so only the decoupled decay moves a
// parameter: by the factor (1 - lr x weight_decay), and only in group 0.
TEST(Optimizer, DecayIsDecoupledAndOnlyOnMatrices) {
  models::LanguageModel model = tiny_model();
  const auto optimizer = make_adamw(*model, adamw_config(0.1, 0.5));
  set_learning_rate(*optimizer, 0.2);
  const torch::Tensor r = model->named_parameters()["blocks.0.mixer.r"];
  const torch::Tensor norm = model->named_parameters()["final_norm.weight"];
  const torch::Tensor r_before = r.detach().clone(), norm_before = norm.detach().clone();
  for (torch::Tensor& p : model->parameters()) p.mutable_grad() = torch::zeros_like(p);
  optimizer->step();
  EXPECT_TRUE(torch::allclose(r, r_before * (1 - 0.2 * 0.5), 1e-6, 1e-7));
  EXPECT_TRUE(torch::equal(norm, norm_before));
}

TEST(Optimizer, SetLearningRateReachesEveryGroup) {
  models::LanguageModel model = tiny_model();
  const auto optimizer = make_adamw(*model, adamw_config());
  set_learning_rate(*optimizer, 0.0123);
  for (const auto& group : optimizer->param_groups()) EXPECT_DOUBLE_EQ(group.options().get_lr(), 0.0123);
}

TEST(Optimizer, ClipGradNormScalesToTheLimitAndReportsTheNormBefore) {
  torch::Tensor a = torch::zeros({2}, torch::requires_grad()), b = torch::zeros({1}, torch::requires_grad());
  torch::Tensor unused = torch::zeros({3}, torch::requires_grad());  // no gradient: skipped
  a.mutable_grad() = torch::tensor({3.0f, 0.0f});
  b.mutable_grad() = torch::tensor({4.0f});
  EXPECT_NEAR(clip_grad_norm({a, b, unused}, 0.0), 5.0, 1e-6);  // 0: measure only
  EXPECT_NEAR(clip_grad_norm({a, b}, 10.0), 5.0, 1e-6);          // under the limit: untouched
  EXPECT_FLOAT_EQ(b.grad().item<float>(), 4.0f);
  EXPECT_NEAR(clip_grad_norm({a, b}, 1.0), 5.0, 1e-6);
  EXPECT_NEAR(a.grad()[0].item<float>(), 0.6f, 1e-5);
  EXPECT_NEAR(b.grad()[0].item<float>(), 0.8f, 1e-5);
  b.mutable_grad() = torch::tensor({std::nanf("")});
  EXPECT_TRUE(std::isnan(clip_grad_norm({a, b}, 1.0)));
  EXPECT_NEAR(a.grad()[0].item<float>(), 0.6f, 1e-5) << "non-finite: nothing is scaled";
}

// The state as named tensors restores an optimizer that then steps exactly
// like the original.
TEST(Optimizer, StateRoundTripsThroughNamedTensors) {
  models::LanguageModel model = tiny_model();
  auto optimizer = make_adamw(*model, adamw_config(0.01, 0.1));
  EXPECT_TRUE(adamw_state(*optimizer, *model).empty()) << "no state before the first step";
  for (int i = 0; i < 2; ++i) {
    optimizer->zero_grad();
    backward_once(model);
    optimizer->step();
  }
  std::map<std::string, torch::Tensor> saved;
  for (auto& [name, tensor] : adamw_state(*optimizer, *model)) saved[name] = tensor.clone();
  EXPECT_EQ(saved.size(), 3 * model->parameters().size());
  EXPECT_EQ(saved.at("blocks.0.mixer.r.step").item<std::int64_t>(), 2);

  models::LanguageModel twin = tiny_model();
  {
    torch::NoGradGuard no_grad;
    for (const auto& item : model->named_parameters()) twin->named_parameters()[item.key()].copy_(item.value());
  }
  auto restored = make_adamw(*twin, adamw_config(0.01, 0.1));
  load_adamw_state(*restored, *twin, saved);
  optimizer->zero_grad();
  backward_once(model);
  optimizer->step();
  restored->zero_grad();
  backward_once(twin);
  restored->step();
  for (const auto& item : model->named_parameters())
    EXPECT_TRUE(torch::equal(item.value(), twin->named_parameters()[item.key()])) << item.key();
}

TEST(Optimizer, LoadingStateOfAnotherModelFails) {
  models::LanguageModel model = tiny_model();
  auto optimizer = make_adamw(*model, adamw_config());
  const torch::Tensor r = model->named_parameters()["blocks.0.mixer.r"];
  std::map<std::string, torch::Tensor> state = {{"blocks.0.mixer.r.exp_avg", torch::zeros({1})},
                                                {"blocks.0.mixer.r.exp_avg_sq", torch::zeros_like(r)},
                                                {"blocks.0.mixer.r.step", torch::tensor(1)}};
  EXPECT_THROW(load_adamw_state(*optimizer, *model, state), std::runtime_error);  // shape
  state.erase("blocks.0.mixer.r.exp_avg");
  EXPECT_THROW(load_adamw_state(*optimizer, *model, state), std::runtime_error);  // incomplete
  EXPECT_THROW(load_adamw_state(*optimizer, *model, {{"blocks.9.mixer.r.step", torch::tensor(1)}}),
               std::runtime_error);  // no such parameter
}

}  // namespace
}  // namespace flashtrain::trainer

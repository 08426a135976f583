// Helpers shared by the models tests.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "flashtrain/models/block_state.h"

namespace flashtrain::models::testing {

// Adds N(0, scale^2) noise to every parameter, so that zero-initialised ones
// (biases, an sLSTM's R) and ones (norm weights) take part in the comparisons.
inline void perturb_parameters(torch::nn::Module& module, double scale) {
  torch::NoGradGuard no_grad;
  for (torch::Tensor& p : module.parameters()) p.add_(torch::randn_like(p) * scale);
}

inline double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).abs().max().item<double>();
}

inline int64_t state_numel(const BlockState& state) {
  int64_t n = 0;
  for (const auto& [key, tensor] : state) n += tensor.numel();
  return n;
}

inline std::vector<std::string> parameter_names(const torch::nn::Module& module) {
  std::vector<std::string> names;
  for (const auto& item : module.named_parameters()) names.push_back(item.key());
  return names;
}

// Runs f, which must throw E with a message containing `needle`.
template <typename E, typename F>
void expect_error(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected one containing: " << needle;
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << "message: " << e.what() << "\nexpected to contain: " << needle;
  }
}

}  // namespace flashtrain::models::testing

// Checks that an option changes nothing but what it promises, shared by the
// CPU tests (vanilla backend) and the GPU tests (every backend).
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "reference.h"

namespace flashrnn::testing {

// With output_h_only the op returns h alone ([1, B, T, N, D]), the same h and
// the same last states and, for a loss of h and the last states, the same
// gradients, bit for bit: the other states' outputs only ever took zero gradients.
inline void expect_h_only_output_changes_nothing(OpInputs in, const std::string& what) {
  for (torch::Tensor* t : {&in.wx, &in.r, &in.b, &in.initial})
    if (t->defined()) t->requires_grad_(false);
  const Result probe = in.run();
  const torch::Tensor w_h = torch::randn_like(probe.states_all.narrow(0, 0, 1), torch::kFloat);
  const torch::Tensor w_last = torch::randn_like(probe.last_states, torch::kFloat);
  const auto run = [&](bool h_only) {
    OpInputs c = in;
    c.options.output_h_only = h_only;
    for (torch::Tensor* t : {&c.wx, &c.r, &c.b, &c.initial})
      if (t->defined()) *t = t->detach().clone().requires_grad_(true);
    const Result r = c.run();
    EXPECT_EQ(r.states_all.size(0), h_only ? 1 : cell_layout(in.options.cell).states) << what;
    const torch::Tensor h = r.states_all.narrow(0, 0, 1);
    ((h.to(torch::kFloat) * w_h).sum() + (r.last_states.to(torch::kFloat) * w_last).sum()).backward();
    std::vector<torch::Tensor> out = {h.detach(), r.last_states.detach(), c.wx.grad(), c.r.grad(), c.b.grad()};
    if (c.initial.defined()) out.push_back(c.initial.grad());
    return out;
  };
  const auto all = run(false), h_only = run(true);
  const char* names[] = {"h", "last_states", "dWx", "dR", "db", "dS0"};
  ASSERT_EQ(all.size(), h_only.size());
  for (size_t i = 0; i < all.size(); ++i) EXPECT_TRUE(all[i].equal(h_only[i])) << what << ": " << names[i];
}

}  // namespace flashrnn::testing

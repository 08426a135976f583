// Each option changes the result exactly as CELLS.md / flashrnn.h specify.
#include <gtest/gtest.h>

#include "cells/registry.h"
#include "option_checks.h"
#include "reference.h"

namespace flashrnn::testing {
namespace {

const auto& kCells = cells::kAllCells;

struct Grads {
  torch::Tensor wx, r, b, initial;
};

// Gradients of Σ w·h for the op or for the autograd reference.
Grads grads(OpInputs in, const torch::Tensor& w, bool reference) {
  for (torch::Tensor* t : {&in.wx, &in.r, &in.b, &in.initial})
    *t = t->detach().clone().requires_grad_(true);
  const torch::Tensor h = reference ? autograd_reference(in)[0] : in.run().states_all[0];
  (h * w).sum().backward();
  // An input that no gradient reached (Elman's initial h under a cut) has none.
  const auto grad = [](const torch::Tensor& t) {
    return t.grad().defined() ? t.grad() : torch::zeros_like(t);
  };
  return {grad(in.wx), grad(in.r), grad(in.b), grad(in.initial)};
}

void expect_same_grads(const OpInputs& in, const std::string& what) {
  const torch::Tensor w = torch::randn_like(in.run().states_all[0]);
  const Grads ours = grads(in, w, false), ref = grads(in, w, true);
  EXPECT_LT(max_abs_diff(ours.wx, ref.wx), 1e-10) << what;
  EXPECT_LT(max_abs_diff(ours.r, ref.r), 1e-10) << what;
  EXPECT_LT(max_abs_diff(ours.b, ref.b), 1e-10) << what;
  EXPECT_LT(max_abs_diff(ours.initial, ref.initial), 1e-10) << what;
}

TEST(Options, GradientRecurrentCutStopsGradientThroughR) {
  torch::manual_seed(30);
  for (Cell cell : kCells) {
    OpInputs in = random_inputs(cell, 2, 6, 2, 4);
    in.options.gradient_recurrent_cut = true;
    expect_same_grads(in, std::string(to_string(cell)));
    // Elman has no other path: a loss on the last h reaches only the last step's Wx.
    if (cell == Cell::kElman) {
      in.wx.requires_grad_(true);
      in.run().last_states[0].sum().backward();
      EXPECT_EQ(in.wx.grad().narrow(1, 0, 5).abs().max().item<double>(), 0.0);
      EXPECT_GT(in.wx.grad().select(1, 5).abs().max().item<double>(), 0.0);
    }
  }
}

TEST(Options, GradientRecurrentClipClampsGradientThroughR) {
  torch::manual_seed(31);
  for (Cell cell : kCells) {
    OpInputs in = random_inputs(cell, 2, 6, 2, 4);
    in.options.gradient_recurrent_clip = 0.05;  // small enough to bite
    expect_same_grads(in, std::string(to_string(cell)));
    // ...and it does change the gradient.
    const torch::Tensor w = torch::randn_like(in.run().states_all[0]);
    OpInputs unclipped = in;
    unclipped.options.gradient_recurrent_clip = 0;
    EXPECT_GT(max_abs_diff(grads(in, w, false).wx, grads(unclipped, w, false).wx), 1e-6);
  }
}

TEST(Options, ForwardClipClampsHAndPassesGradientStraightThrough) {
  torch::manual_seed(32);
  for (Cell cell : kCells) {
    OpInputs in = random_inputs(cell, 3, 7, 2, 4);
    in.wx = in.wx * 3;  // drive h towards the clip
    in.options.forward_clip = 0.3;
    const Result r = in.run();
    EXPECT_LE(r.states_all[0].abs().max().item<double>(), 0.3);
    EXPECT_LT(max_abs_diff(r.states_all, scalar_reference(in)), 1e-12) << to_string(cell);
    expect_same_grads(in, std::string(to_string(cell)));
    // A clip no value reaches changes nothing.
    OpInputs loose = in, off = in;
    loose.options.forward_clip = 1e9;
    off.options.forward_clip = 0;
    EXPECT_TRUE(loose.run().states_all.equal(off.run().states_all));
  }
}

TEST(Options, ResetMaskRestartsFromInitialStates) {
  torch::manual_seed(33);
  for (Cell cell : kCells) {
    OpInputs in = random_inputs(cell, 3, 8, 2, 4);
    torch::Tensor mask = torch::zeros({3, 8}, torch::kBool);
    mask[0][3] = true;
    mask[2][1] = true;
    mask[2][6] = true;
    in.options.reset_mask = mask;
    const Result r = in.run();
    EXPECT_LT(max_abs_diff(r.states_all, scalar_reference(in)), 1e-12) << to_string(cell);
    expect_same_grads(in, std::string(to_string(cell)));

    // Row 0 from step 3 on equals a fresh run of steps 3.. from the initial states.
    OpInputs tail = in;
    tail.options.reset_mask.reset();
    tail.wx = in.wx.narrow(1, 3, 5);
    const Result fresh = tail.run();
    EXPECT_LT(max_abs_diff(r.states_all.select(1, 0).narrow(1, 3, 5),
                           fresh.states_all.select(1, 0)),
              1e-12);
    // An all-false mask is no mask.
    OpInputs none = in;
    none.options.reset_mask = torch::zeros({3, 8}, torch::kBool);
    OpInputs absent = in;
    absent.options.reset_mask.reset();
    EXPECT_TRUE(none.run().states_all.equal(absent.run().states_all));
  }
}

// The same outputs and the same gradients, bit for bit, with and without
// recompute: the backward's second forward makes the same buffers.
void expect_recompute_changes_nothing(OpInputs in, const std::string& what) {
  for (torch::Tensor* t : {&in.wx, &in.r, &in.b, &in.initial}) t->requires_grad_(false);
  const torch::Tensor w = torch::randn_like(in.run().states_all);
  const auto run = [&](bool recompute) {
    OpInputs c = in;
    c.options.recompute = recompute;
    for (torch::Tensor* t : {&c.wx, &c.r, &c.b, &c.initial}) *t = t->detach().clone().requires_grad_(true);
    const Result r = c.run();
    ((r.states_all * w).sum() + r.last_states.sum()).backward();
    return std::vector<torch::Tensor>{r.states_all.detach(), c.wx.grad(), c.r.grad(), c.b.grad(), c.initial.grad()};
  };
  const auto kept = run(false), recomputed = run(true);
  const char* names[] = {"states_all", "dWx", "dR", "db", "dS0"};
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(kept[i].equal(recomputed[i])) << what << ": " << names[i];
}

TEST(Options, RecomputeGivesTheSameOutputsAndGradients) {
  torch::manual_seed(35);
  for (Cell cell : kCells) {
    OpInputs in = random_inputs(cell, 3, 9, 2, 4);
    in.options.reset_mask = torch::rand({3, 9}) < 0.2;
    expect_recompute_changes_nothing(in, std::string(to_string(cell)));
  }
}

TEST(Options, HOnlyOutputGivesTheSameHLastStatesAndGradients) {
  torch::manual_seed(36);
  for (Cell cell : kCells) {
    OpInputs in = random_inputs(cell, 3, 9, 2, 4);
    in.options.reset_mask = torch::rand({3, 9}) < 0.2;
    expect_h_only_output_changes_nothing(in, std::string(to_string(cell)));
    OpInputs no_initial = random_inputs(cell, 2, 5, 1, 4, torch::kDouble, false);
    expect_h_only_output_changes_nothing(no_initial, std::string(to_string(cell)) + ", zero initial states");
  }
}

}  // namespace
}  // namespace flashrnn::testing

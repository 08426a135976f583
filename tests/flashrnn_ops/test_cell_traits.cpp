// The cells' declared traits hold for their equations. kStatesReadBack names
// the state slots backward() reads; the tensor-core kernels save and reload
// only those (fused/tc_forward.cuh, tc_backward.cuh), so a slot missing from it
// must not change the gradients, and a slot in it must. kDrhIsDwx lets the
// tensor-core backward store its δ(R h) as δWx too, so a cell that claims it
// must write drh equal to dwx for every gate. A recording forward keeps per
// step only the kStatesReadBack slots (cells/saved_states.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <limits>
#include <random>

#include "backend_choice.h"
#include "cells/registry.h"
#include "cells/saved_states.h"
#include "flashrnn/tune/fused_shape.h"
#include "flashrnn/tune/tc_model.h"
#include "fused/tc_selection.h"
#include "reference.h"

namespace flashrnn::testing {
namespace {

template <class Cell>
struct BackwardCase {
  double cache[Cell::kCache], s_prev[Cell::kStates], s_next[Cell::kStates], ds[Cell::kStates];

  explicit BackwardCase(std::mt19937& rng) {
    std::uniform_real_distribution<double> gate(0.05, 0.95), value(0.5, 2.0);
    for (double& c : cache) c = gate(rng);  // activated gates lie in (0, 1)
    for (int s = 0; s < Cell::kStates; ++s) {
      s_prev[s] = value(rng);
      s_next[s] = value(rng) + 1.0;  // ≥ 1, as sLSTM's normaliser n is
      ds[s] = value(rng);
    }
  }

  using Outputs = std::array<double, 2 * Cell::kGates + Cell::kBiases + Cell::kStates>;

  // Every output of backward() in one array.
  Outputs outputs() const {
    double dwx[Cell::kGates], drh[Cell::kGates], db[Cell::kBiases], ds_prev[Cell::kStates];
    Cell::template backward<double>(cache, s_prev, s_next, ds, dwx, drh, db, ds_prev);
    Outputs all{};
    int i = 0;
    for (double v : dwx) all[i++] = v;
    for (double v : drh) all[i++] = v;
    for (double v : db) all[i++] = v;
    for (double v : ds_prev) all[i++] = v;
    return all;
  }
};

TEST(CellTraits, StatesReadBackNamesExactlyTheStatesTheBackwardReads) {
  for (Cell cell : cells::kAllCells) {
    cells::dispatch_cell(cell, [&](auto c) {
      using C = decltype(c);
      static_assert(C::kStatesReadBack < (1u << C::kStates), "a bit per state slot");
      std::mt19937 rng(11);
      for (int trial = 0; trial < 20; ++trial) {
        const BackwardCase<C> base(rng);
        const auto expected = base.outputs();
        for (int s = 0; s < C::kStates; ++s) {
          const bool read = C::kStatesReadBack >> s & 1u;
          BackwardCase<C> changed = base;
          // Unread: NaN must not reach any output. Read: another value must change one.
          const double other = read ? base.s_prev[s] + 0.5 : std::numeric_limits<double>::quiet_NaN();
          changed.s_prev[s] = other;
          changed.s_next[s] = read ? base.s_next[s] + 0.5 : other;
          const auto got = changed.outputs();
          bool differs = false;
          for (size_t i = 0; i < got.size(); ++i) {
            if (!read) {
              EXPECT_EQ(got[i], expected[i]) << C::kName << " state " << s << " output " << i;
            }
            differs = differs || got[i] != expected[i];
          }
          if (read) {
            EXPECT_TRUE(differs) << C::kName << " reads state " << s << " by its trait, but no output depends on it";
          }
        }
      }
    });
  }
}

TEST(CellTraits, DrhIsDwxHoldsExactlyForTheCellsThatClaimIt) {
  for (Cell cell : cells::kAllCells) {
    cells::dispatch_cell(cell, [&](auto c) {
      using C = decltype(c);
      std::mt19937 rng(7);
      int equal = 0;
      for (int trial = 0; trial < 100; ++trial) {
        const auto out = BackwardCase<C>(rng).outputs();  // dwx, then drh
        equal += std::equal(out.begin(), out.begin() + C::kGates, out.begin() + C::kGates);
      }
      // A cell that claims it: always; one that does not: never (else it should claim it).
      EXPECT_EQ(equal, C::kDrhIsDwx ? 100 : 0) << C::kName;
    });
  }
}

// The one list of cells (flashrnn/cell_list.h) reaches every place a cell is
// named: the enum in list order, the names both ways, the tuner's enum and
// counts (taken from the cell's header), and the vanilla backend, which runs
// each cell's forward and backward here (the GPU backends' tests loop over the
// same list).
TEST(CellList, EveryListedCellIsNamedCountedAndRuns) {
  ASSERT_EQ(std::size(cells::kAllCells), 4u);
  for (size_t i = 0; i < std::size(cells::kAllCells); ++i) {
    const Cell cell = cells::kAllCells[i];
    const std::string name(to_string(cell));
    SCOPED_TRACE(name);
    EXPECT_EQ(int(cell), int(i)) << "the enum follows the list";
    EXPECT_EQ(parse_cell(name), cell);
    const tune::Cell tuned = fused::tuner_cell(cell);
    EXPECT_EQ(tune::to_string(tuned), name);
    EXPECT_EQ(tune::parse_cell(name), tuned);
    cells::dispatch_cell(cell, [&](auto c) {
      using C = decltype(c);
      const CellLayout layout = cell_layout(cell);
      EXPECT_EQ(layout.gates, C::kGates);
      EXPECT_EQ(tune::cell_gates(tuned), C::kGates);
      EXPECT_EQ(tune::cell_states(tuned), C::kStates);
      EXPECT_EQ(tune::cell_cache(tuned), C::kCache);
    });
    OpInputs in = random_inputs(cell, 2, 3, 1, 4);
    for (torch::Tensor* t : {&in.wx, &in.r, &in.b}) t->requires_grad_(true);
    in.run().states_all.sum().backward();
    EXPECT_TRUE(in.wx.grad().defined());
  }
  try {
    parse_cell("lstn");
    ADD_FAILURE() << "parse_cell accepted an unknown name";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("lstm, slstm, gru, elman"), std::string::npos) << e.what();
  }
}

// The per-step buffer a recording forward leaves for its backward holds the
// read-back run of slots alone, with the values of those states at every step.
TEST(CellTraits, TheForwardKeepsOnlyTheStatesTheBackwardReads) {
  torch::manual_seed(71);
  for (Cell cell : cells::kAllCells) {
    cells::dispatch_cell(cell, [&](auto c) {
      using C = decltype(c);
      constexpr unsigned read = C::kStatesReadBack;
      const int first = cells::first_read_state(read), count = cells::read_state_count(read);
      const OpInputs in = random_inputs(cell, 3, 7, 2, 5, torch::kFloat);
      const Problem problem{cell};
      const ForwardResult r = forward_on(Backend::kVanilla, problem, Inputs{in.wx, in.r, in.b, in.initial, {}});
      const at::Tensor& kept = r.saved.states;  // [T, B, R, N, D]
      ASSERT_EQ(kept.sizes(), (at::IntArrayRef{7, 3, count, 2, 5})) << C::kName;
      for (int k = 0; k < count; ++k)  // states_all [S, B, T, N, D]
        EXPECT_TRUE(kept.select(2, k).equal(r.states_all[first + k].transpose(0, 1))) << C::kName << " slot " << k;
    });
  }
}

}  // namespace
}  // namespace flashrnn::testing

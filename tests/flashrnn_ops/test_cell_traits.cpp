// The cells' declared traits hold for their equations: kDrhIsDwx lets the
// fused backward store only δWx and compute δR from it (fused_backend.cpp),
// so a cell that claims it must write drh equal to dwx for every gate.
#include <gtest/gtest.h>

#include <random>

#include "cells/registry.h"

namespace flashrnn::testing {
namespace {

// Runs Cell::backward on random (but valid) values; true when drh == dwx for every gate.
template <class Cell>
bool drh_equals_dwx(std::mt19937& rng) {
  std::uniform_real_distribution<double> gate(0.05, 0.95), value(-2.0, 2.0);
  double cache[Cell::kCache], s_prev[Cell::kStates], s_next[Cell::kStates], ds[Cell::kStates];
  for (double& c : cache) c = gate(rng);  // activated gates lie in (0, 1)
  for (int s = 0; s < Cell::kStates; ++s) {
    s_prev[s] = value(rng);
    s_next[s] = value(rng);
    ds[s] = value(rng);
  }
  double dwx[Cell::kGates], drh[Cell::kGates], db[Cell::kBiases], ds_prev[Cell::kStates];
  Cell::template backward<double>(cache, s_prev, s_next, ds, dwx, drh, db, ds_prev);
  for (int g = 0; g < Cell::kGates; ++g)
    if (dwx[g] != drh[g]) return false;
  return true;
}

TEST(CellTraits, DrhIsDwxHoldsExactlyForTheCellsThatClaimIt) {
  for (Cell cell : {Cell::kLstm, Cell::kSlstm, Cell::kGru, Cell::kElman}) {
    cells::dispatch_cell(cell, [&](auto c) {
      using C = decltype(c);
      std::mt19937 rng(7);
      int equal = 0;
      for (int i = 0; i < 100; ++i) equal += drh_equals_dwx<C>(rng);
      // A cell that claims it: always; one that does not: the gradients differ (else claim it).
      EXPECT_EQ(equal, C::kDrhIsDwx ? 100 : 0) << C::kName;
    });
  }
}

}  // namespace
}  // namespace flashrnn::testing

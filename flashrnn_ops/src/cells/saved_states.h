// Which states a forward that records for a backward keeps per step. A cell's
// backward reads only the state slots of Cell::kStatesReadBack (bit s: slot s;
// tests/flashrnn_ops/test_cell_traits.cpp checks the claim); they are one run
// of consecutive slots, and the per-step buffer holds that run alone: slot s at
// index s - first_read_state. sLSTM keeps c and n of h, c, n, m; LSTM c of h, c;
// Elman nothing (its cache holds h).
#pragma once

namespace flashrnn::cells {

constexpr int read_state_count(unsigned mask) { return mask ? int(mask & 1u) + read_state_count(mask >> 1) : 0; }

// The lowest slot of the mask (0 for an empty one).
constexpr int first_read_state(unsigned mask) {
  for (int s = 0; s < 32; ++s)
    if (mask >> s & 1u) return s;
  return 0;
}

// The slot of the i-th set bit.
constexpr int nth_read_state(unsigned mask, int i) { return first_read_state(mask) + i; }

// Whether the set bits are consecutive (what the saved run needs).
constexpr bool is_one_run(unsigned mask) {
  const unsigned low = mask >> first_read_state(mask);
  return (low & (low + 1u)) == 0;
}

template <class Cell>
constexpr bool reads_state_back(int s) {
  static_assert(is_one_run(Cell::kStatesReadBack), "the states a backward reads must be consecutive slots");
  return Cell::kStatesReadBack >> s & 1u;
}

}  // namespace flashrnn::cells

// The tuner's cells: an enum value to its definition in flashrnn_ops/src/cells/
// (gate, state and cache counts, tuning constants), through the one list of
// cells (flashrnn/cell_list.h).
#pragma once

#include <utility>

#include "cells/all.h"
#include "flashrnn/tune/errors.h"
#include "flashrnn/tune/fused_shape.h"

namespace flashrnn::tune {

// fn(CellType{}) for the cell named by the enum.
template <class Fn>
decltype(auto) with_cell(Cell cell, Fn&& fn) {
#define FLASHRNN_TUNE_CELL_CASE(CELL, ...) \
  case Cell::k##CELL:                      \
    return std::forward<Fn>(fn)(cells::CELL{});
  switch (cell) { FLASHRNN_FOR_EACH_CELL(FLASHRNN_TUNE_CELL_CASE, _) }
#undef FLASHRNN_TUNE_CELL_CASE
  throw ProblemError("unknown cell enum value");
}

}  // namespace flashrnn::tune

// The tuner's cells: an enum value to its definition in flashrnn_ops/src/cells/
// (gate, state and cache counts), through the one list of cells
// (flashrnn/cell_list.h).
#pragma once

#include <utility>

#include "cells/visit.h"
#include "flashrnn/tune/errors.h"
#include "flashrnn/tune/fused_shape.h"

namespace flashrnn::tune {

// fn(CellType{}) for the cell named by the enum.
template <class Fn>
decltype(auto) with_cell(Cell cell, Fn&& fn) {
  return cells::visit_cell<ProblemError>(cell, std::forward<Fn>(fn));
}

}  // namespace flashrnn::tune

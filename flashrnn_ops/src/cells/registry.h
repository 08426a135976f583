// Each cell's type for its enum value (the list: flashrnn/cell_list.h; the
// headers: cells/all.h).
#pragma once

#include <utility>

#include "cells/visit.h"
#include "flashrnn/flashrnn.h"

namespace flashrnn::cells {

// Calls fn(CellType{}) for the cell named by the enum.
template <class Fn>
decltype(auto) dispatch_cell(Cell cell, Fn&& fn) {
  return visit_cell<InputError>(cell, std::forward<Fn>(fn));
}

// Every cell, in the list's order.
inline constexpr const auto& kAllCells = kEveryCell<Cell>;

}  // namespace flashrnn::cells

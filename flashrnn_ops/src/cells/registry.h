// Each cell's type for its enum value (the list: flashrnn/cell_list.h; the
// headers: cells/all.h).
#pragma once

#include <utility>

#include "cells/all.h"
#include "flashrnn/flashrnn.h"

namespace flashrnn::cells {

// Calls fn(CellType{}) for the cell named by the enum.
template <class Fn>
decltype(auto) dispatch_cell(Cell cell, Fn&& fn) {
#define FLASHRNN_DISPATCH_CASE(CELL, ...) \
  case Cell::k##CELL:                     \
    return std::forward<Fn>(fn)(CELL{});
  switch (cell) { FLASHRNN_FOR_EACH_CELL(FLASHRNN_DISPATCH_CASE, _) }
#undef FLASHRNN_DISPATCH_CASE
  throw InputError("flashrnn: unknown cell enum value");
}

// Every cell, in the list's order.
#define FLASHRNN_CELL_VALUE(CELL, ...) Cell::k##CELL,
inline constexpr Cell kAllCells[] = {FLASHRNN_FOR_EACH_CELL(FLASHRNN_CELL_VALUE, _)};
#undef FLASHRNN_CELL_VALUE

}  // namespace flashrnn::cells

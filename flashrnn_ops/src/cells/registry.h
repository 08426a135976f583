// The list of cells. Adding a cell = one header in cells/ plus one case here.
#pragma once

#include <utility>

#include "cells/elman.h"
#include "cells/gru.h"
#include "cells/lstm.h"
#include "cells/slstm.h"
#include "flashrnn/flashrnn.h"

namespace flashrnn::cells {

// Calls fn(CellType{}) for the cell named by the enum.
template <class Fn>
decltype(auto) dispatch_cell(Cell cell, Fn&& fn) {
  switch (cell) {
    case Cell::kLstm: return std::forward<Fn>(fn)(Lstm{});
    case Cell::kSlstm: return std::forward<Fn>(fn)(Slstm{});
    case Cell::kGru: return std::forward<Fn>(fn)(Gru{});
    case Cell::kElman: return std::forward<Fn>(fn)(Elman{});
  }
  throw InputError("flashrnn: unknown cell enum value");
}

}  // namespace flashrnn::cells

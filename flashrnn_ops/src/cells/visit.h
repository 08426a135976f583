// Reaching a cell's definition from an enum whose enumerators are the list's
// k<Type> (flashrnn::Cell, and the torch-free tuner's tune::Cell): one switch,
// one array of values and one list of names for both.
#pragma once

#include <string>
#include <utility>

#include "cells/all.h"

namespace flashrnn::cells {

// fn(CellType{}) for the cell `cell` names; throws Error for a value naming none.
template <class Error, class Enum, class Fn>
decltype(auto) visit_cell(Enum cell, Fn&& fn) {
#define FLASHRNN_VISIT_CASE(CELL, ...) \
  case Enum::k##CELL:                  \
    return std::forward<Fn>(fn)(CELL{});
  switch (cell) { FLASHRNN_FOR_EACH_CELL(FLASHRNN_VISIT_CASE, _) }
#undef FLASHRNN_VISIT_CASE
  throw Error("flashrnn: unknown cell enum value " + std::to_string(int(cell)));
}

// Every value of such an enum, in the list's order.
#define FLASHRNN_CELL_VALUE_OF(CELL, ENUM) ENUM::k##CELL,
template <class Enum>
inline constexpr Enum kEveryCell[] = {FLASHRNN_FOR_EACH_CELL(FLASHRNN_CELL_VALUE_OF, Enum)};
#undef FLASHRNN_CELL_VALUE_OF

// "lstm, slstm, gru, elman": the cells' names in the list's order, for messages.
inline std::string cell_names() {
  std::string names;
#define FLASHRNN_APPEND_NAME(CELL, ...) names += (names.empty() ? "" : ", ") + std::string(CELL::kName);
  FLASHRNN_FOR_EACH_CELL(FLASHRNN_APPEND_NAME, _)
#undef FLASHRNN_APPEND_NAME
  return names;
}

}  // namespace flashrnn::cells

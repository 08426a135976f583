// The cells, listed once. FLASHRNN_FOR_EACH_CELL(X, args...) expands
// X(Type, args...) for each cell, Type being the struct in src/cells/ (its
// enumerator is k<Type>). The op's enum (flashrnn.h) and dispatch
// (cells/registry.h), the kernel instantiations of every backend and the
// tuner's cell enum all expand this list; what a cell is (gates, states,
// equations, tuning constants) is in its header. Adding a cell: docs/CELLS.md.
// Plain preprocessor: the torch-free tuner includes it too.
#pragma once

#define FLASHRNN_FOR_EACH_CELL(X, ...) \
  X(Lstm, __VA_ARGS__)                 \
  X(Slstm, __VA_ARGS__)                \
  X(Gru, __VA_ARGS__)                  \
  X(Elman, __VA_ARGS__)

// For enums: `enum class Cell { FLASHRNN_FOR_EACH_CELL(FLASHRNN_CELL_ENUMERATOR, _) };`
#define FLASHRNN_CELL_ENUMERATOR(CELL, ...) k##CELL,

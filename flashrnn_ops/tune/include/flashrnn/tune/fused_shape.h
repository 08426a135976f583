// The case the fused kernel is tuned for: cell, heads, head dimension, batch
// and dtype. Plain enums: the op library maps its own (torch-facing) Cell onto
// these, the tuner stays free of torch.
#pragma once

#include <string>
#include <string_view>

#include "flashrnn/cell_list.h"

namespace flashrnn::tune {

// The op's cells (flashrnn/cell_list.h), without its torch-facing header.
enum class Cell { FLASHRNN_FOR_EACH_CELL(FLASHRNN_CELL_ENUMERATOR, _) };
enum class DType { kBf16, kFp16, kFp32 };

// R's gate slots and the fp32 states a unit carries (the cell's header in
// flashrnn_ops/src/cells/; CELLS.md): LSTM 4 and 2, sLSTM 4 and 4, GRU 3 and 1, Elman 1 and 1.
int cell_gates(Cell cell);
int cell_states(Cell cell);
// Bytes of one element of R, h and Wx.
int dtype_bytes(DType dtype);

std::string_view to_string(Cell cell);
std::string_view to_string(DType dtype);
// "lstm" / "slstm" / "gru" / "elman"; throws ProblemError listing the choices.
Cell parse_cell(std::string_view name);
// "bf16" / "fp16" / "fp32".
DType parse_dtype(std::string_view name);

struct FusedShape {
  Cell cell = Cell::kLstm;
  int heads = 1;
  int head_dim = 64;
  int batch = 16;
  DType dtype = DType::kBf16;
};

// Throws ProblemError naming a size below 1.
void validate(const FusedShape& shape);
// "lstm 12x64 batch 16 bf16".
std::string describe(const FusedShape& shape);

}  // namespace flashrnn::tune

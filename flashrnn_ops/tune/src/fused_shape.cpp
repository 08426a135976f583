#include "flashrnn/tune/fused_shape.h"

#include "cell_types.h"
#include "flashrnn/tune/errors.h"

namespace flashrnn::tune {
namespace {

constexpr DType kDTypes[] = {DType::kBf16, DType::kFp16, DType::kFp32};

}  // namespace

int cell_gates(Cell cell) {
  return with_cell(cell, [](auto c) { return decltype(c)::kGates; });
}

int cell_states(Cell cell) {
  return with_cell(cell, [](auto c) { return decltype(c)::kStates; });
}

int dtype_bytes(DType dtype) { return dtype == DType::kFp32 ? 4 : 2; }

std::string_view to_string(Cell cell) {
  return with_cell(cell, [](auto c) { return std::string_view(decltype(c)::kName); });
}

std::string_view to_string(DType dtype) {
  switch (dtype) {
    case DType::kBf16: return "bf16";
    case DType::kFp16: return "fp16";
    case DType::kFp32: return "fp32";
  }
  return "?";
}

Cell parse_cell(std::string_view name) {
  for (Cell c : cells::kEveryCell<Cell>)
    if (to_string(c) == name) return c;
  throw ProblemError("unknown cell '" + std::string(name) + "'; choose one of " + cells::cell_names());
}

DType parse_dtype(std::string_view name) {
  for (DType d : kDTypes)
    if (to_string(d) == name) return d;
  throw ProblemError("unknown dtype '" + std::string(name) + "'; choose one of bf16, fp16, fp32");
}

void validate(const FusedShape& shape) {
  for (auto [value, name] : {std::pair{shape.heads, "heads"}, {shape.head_dim, "head_dim"},
                             {shape.batch, "batch"}})
    if (value < 1)
      throw ProblemError(std::string(name) + " is " + std::to_string(value) +
                         "; it must be at least 1");
}

std::string describe(const FusedShape& shape) {
  return std::string(to_string(shape.cell)) + " " + std::to_string(shape.heads) + "x" +
         std::to_string(shape.head_dim) + " batch " + std::to_string(shape.batch) + " " +
         std::string(to_string(shape.dtype));
}

}  // namespace flashrnn::tune

#include "fused/tc_selection.h"

#include <map>
#include <mutex>
#include <tuple>

#include "flashrnn/tune/device_query.h"

namespace flashrnn::fused {

tune::Cell tuner_cell(Cell cell) {
#define FLASHRNN_TUNER_CASE(CELL, ...) \
  case Cell::k##CELL:                  \
    return tune::Cell::k##CELL;
  switch (cell) { FLASHRNN_FOR_EACH_CELL(FLASHRNN_TUNER_CASE, _) }
#undef FLASHRNN_TUNER_CASE
  throw InputError("flashrnn: unknown cell enum value");
}

namespace {

tune::DType tuner_dtype(TcStorage storage) {
  switch (storage) {
    case TcStorage::kBf16: return tune::DType::kBf16;
    case TcStorage::kFp16: return tune::DType::kFp16;
    case TcStorage::kFp32: return tune::DType::kFp32;
  }
  return tune::DType::kFp32;
}

}  // namespace

const tune::TcSelection& tc_selection(int device_index, Cell cell, TcStorage storage,
                                      int64_t head_dim) {
  using Key = std::tuple<int, Cell, TcStorage, int64_t>;
  static std::mutex mutex;
  static std::map<int, tune::DeviceProps> devices;
  static std::map<Key, tune::TcSelection> selections;  // nodes never move: references stay valid

  const std::lock_guard<std::mutex> lock(mutex);
  const Key key{device_index, cell, storage, head_dim};
  if (auto it = selections.find(key); it != selections.end()) return it->second;
  auto device = devices.find(device_index);
  if (device == devices.end())
    device = devices.emplace(device_index, tune::query_cuda_device(device_index)).first;
  tune::FusedShape shape;  // one head, one tile of 16 rows: neither changes the decision
  shape.cell = tuner_cell(cell);
  shape.head_dim = int(head_dim);
  shape.dtype = tuner_dtype(storage);
  return selections.emplace(key, tune::select_tc_config(device->second, shape)).first->second;
}

}  // namespace flashrnn::fused

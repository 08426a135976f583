// The safetensors format (Hugging Face), written and read without torch:
//
//   8 bytes   N, the header's length, unsigned little-endian
//   N bytes   JSON: {"__metadata__": {"format": "pt"},
//                    "<name>": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...}
//             padded with spaces so that the data starts at a multiple of 8
//   data      the tensors' bytes, little-endian, row-major, back to back
//
// Offsets are relative to the start of the data. The writer orders tensors by
// element size (largest first), then by name, so every tensor starts at a
// multiple of its element size, and leaves no gaps (the reference reader
// rejects them). Metadata values are strings, as the format requires.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace flashtrain::trainer {

// Bytes of one element of a safetensors dtype ("F64", "F32", "F16", "BF16",
// "I64", "I32", "I16", "I8", "U8", "BOOL"); throws std::invalid_argument otherwise.
std::size_t safetensors_dtype_size(std::string_view dtype);

// A tensor to write: `data` holds `bytes` = product(shape) x dtype size bytes.
struct TensorBytes {
  std::string name;
  std::string dtype;
  std::vector<std::int64_t> shape;
  const void* data = nullptr;
  std::size_t bytes = 0;
};

using ByteSink = std::function<void(const void* data, std::size_t bytes)>;

// Writes the file's bytes to `sink`. `metadata` gets "format": "pt" unless it
// names a format. Throws std::invalid_argument for duplicate or empty names,
// unknown dtypes and sizes that disagree with the shape.
void write_safetensors(const std::vector<TensorBytes>& tensors,
                       const std::map<std::string, std::string>& metadata, const ByteSink& sink);

// A whole safetensors file in memory, checked on reading.
class SafetensorsFile {
 public:
  struct Entry {
    std::string dtype;
    std::vector<std::int64_t> shape;
    const char* data = nullptr;
    std::size_t bytes = 0;
  };

  // Reads and validates `path`: header length within the file, valid JSON,
  // known dtypes, sizes matching shapes, offsets inside the data, in order,
  // without gaps or overlaps. Throws std::runtime_error naming the file and the problem.
  static SafetensorsFile read(const std::string& path);
  // The same for bytes already in memory; `name` is used in messages.
  static SafetensorsFile parse(std::string bytes, const std::string& name);

  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::map<std::string, Entry>& tensors() const { return tensors_; }
  // Throws std::runtime_error naming the file if there is no such tensor.
  const Entry& at(const std::string& name) const;
  bool contains(const std::string& name) const { return tensors_.count(name) != 0; }
  // Offset of the first data byte in the file (8 + header length).
  std::size_t data_start() const { return data_start_; }

 private:
  std::string name_;
  std::shared_ptr<const std::string> bytes_;
  std::size_t data_start_ = 0;
  std::map<std::string, std::string> metadata_;
  std::map<std::string, Entry> tensors_;
};

}  // namespace flashtrain::trainer

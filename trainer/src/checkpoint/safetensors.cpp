#include "flashtrain/trainer/checkpoint/safetensors.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace flashtrain::trainer {
namespace {

constexpr std::size_t kAlignment = 8;
// The reference implementation's limit on the header; also keeps a corrupt
// length from making us allocate gigabytes.
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

std::uint64_t element_count(const std::vector<std::int64_t>& shape) {
  std::uint64_t count = 1;
  for (std::int64_t d : shape) {
    if (d < 0) throw std::invalid_argument("negative dimension");
    count *= std::uint64_t(d);
  }
  return count;
}

void put_u64_le(unsigned char* out, std::uint64_t value) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<unsigned char>(value >> (8 * i));
}

std::uint64_t get_u64_le(const unsigned char* in) {
  std::uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value |= std::uint64_t(in[i]) << (8 * i);
  return value;
}

}  // namespace

std::size_t safetensors_dtype_size(std::string_view dtype) {
  static const std::map<std::string_view, std::size_t> sizes = {
      {"F64", 8}, {"I64", 8}, {"U64", 8}, {"F32", 4}, {"I32", 4}, {"U32", 4}, {"F16", 2},
      {"BF16", 2}, {"I16", 2}, {"U16", 2}, {"I8", 1}, {"U8", 1}, {"BOOL", 1}};
  const auto it = sizes.find(dtype);
  if (it == sizes.end()) throw std::invalid_argument("unknown safetensors dtype '" + std::string(dtype) + "'");
  return it->second;
}

void write_safetensors(const std::vector<TensorBytes>& tensors,
                       const std::map<std::string, std::string>& metadata, const ByteSink& sink) {
  std::vector<const TensorBytes*> order;
  std::set<std::string> names;
  for (const TensorBytes& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__")
      throw std::invalid_argument("safetensors: bad tensor name '" + t.name + "'");
    if (!names.insert(t.name).second) throw std::invalid_argument("safetensors: duplicate tensor " + t.name);
    const std::size_t want = element_count(t.shape) * safetensors_dtype_size(t.dtype);
    if (t.bytes != want)
      throw std::invalid_argument("safetensors: " + t.name + " has " + std::to_string(t.bytes) +
                                  " bytes; its dtype and shape need " + std::to_string(want));
    if (t.bytes > 0 && t.data == nullptr) throw std::invalid_argument("safetensors: " + t.name + " has no data");
    order.push_back(&t);
  }
  // Largest elements first: every tensor then starts at a multiple of its element size.
  std::sort(order.begin(), order.end(), [](const TensorBytes* a, const TensorBytes* b) {
    const std::size_t sa = safetensors_dtype_size(a->dtype), sb = safetensors_dtype_size(b->dtype);
    return sa != sb ? sa > sb : a->name < b->name;
  });

  nlohmann::json header = nlohmann::json::object();
  nlohmann::json meta(metadata);
  if (!meta.contains("format")) meta["format"] = "pt";
  header["__metadata__"] = meta;
  std::uint64_t offset = 0;
  for (const TensorBytes* t : order) {
    header[t->name] = {{"dtype", t->dtype}, {"shape", t->shape}, {"data_offsets", {offset, offset + t->bytes}}};
    offset += t->bytes;
  }
  std::string text = header.dump();
  // Pad with spaces (valid JSON whitespace) so the data starts 8-byte aligned.
  text.append((kAlignment - (8 + text.size()) % kAlignment) % kAlignment, ' ');
  unsigned char length[8];
  put_u64_le(length, text.size());
  sink(length, sizeof length);
  sink(text.data(), text.size());
  for (const TensorBytes* t : order)
    if (t->bytes > 0) sink(t->data, t->bytes);
}

SafetensorsFile SafetensorsFile::read(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  std::string bytes(std::size_t(in.tellg()), '\0');
  in.seekg(0);
  if (!in.read(bytes.data(), std::streamsize(bytes.size()))) throw std::runtime_error("cannot read " + path);
  return parse(std::move(bytes), path);
}

SafetensorsFile SafetensorsFile::parse(std::string bytes, const std::string& name) {
  const auto fail = [&](const std::string& problem) {
    return std::runtime_error(name + ": not a valid safetensors file: " + problem);
  };
  SafetensorsFile file;
  file.name_ = name;
  // Held by pointer so that Entry::data stays valid when the file object moves
  // (a moved std::string may relocate short contents).
  file.bytes_ = std::make_shared<const std::string>(std::move(bytes));
  const std::string& b = *file.bytes_;
  if (b.size() < 8) throw fail("shorter than the 8-byte header length");
  const std::uint64_t header_bytes = get_u64_le(reinterpret_cast<const unsigned char*>(b.data()));
  if (header_bytes > kMaxHeaderBytes || header_bytes > b.size() - 8)
    throw fail("header length " + std::to_string(header_bytes) + " exceeds the file's " +
               std::to_string(b.size()) + " bytes");
  file.data_start_ = 8 + std::size_t(header_bytes);
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(b.begin() + 8, b.begin() + std::ptrdiff_t(file.data_start_));
  } catch (const nlohmann::json::exception& e) {
    throw fail(std::string("header is not JSON: ") + e.what());
  }
  if (!header.is_object()) throw fail("header is not a JSON object");

  struct Span {
    std::uint64_t begin, end;
    std::string name;
  };
  std::vector<Span> spans;
  for (const auto& [key, value] : header.items()) {
    try {
      if (key == "__metadata__") {
        for (const auto& [meta_key, meta_value] : value.items())
          file.metadata_[meta_key] = meta_value.get<std::string>();
        continue;
      }
      Entry entry;
      entry.dtype = value.at("dtype").get<std::string>();
      entry.shape = value.at("shape").get<std::vector<std::int64_t>>();
      const auto offsets = value.at("data_offsets").get<std::vector<std::uint64_t>>();
      if (offsets.size() != 2 || offsets[0] > offsets[1])
        throw fail(key + ": data_offsets must be [begin, end] with begin <= end");
      if (offsets[1] > b.size() - file.data_start_)
        throw fail(key + ": data_offsets end " + std::to_string(offsets[1]) + " lies past the data's " +
                   std::to_string(b.size() - file.data_start_) + " bytes");
      std::uint64_t want = 0;
      try {
        want = element_count(entry.shape) * safetensors_dtype_size(entry.dtype);
      } catch (const std::invalid_argument& e) {
        throw fail(key + ": " + e.what());
      }
      if (offsets[1] - offsets[0] != want)
        throw fail(key + ": " + std::to_string(offsets[1] - offsets[0]) + " bytes for dtype " + entry.dtype +
                   " and its shape, which need " + std::to_string(want));
      entry.data = b.data() + file.data_start_ + offsets[0];
      entry.bytes = std::size_t(want);
      spans.push_back({offsets[0], offsets[1], key});
      file.tensors_.emplace(key, std::move(entry));
    } catch (const nlohmann::json::exception& e) {
      throw fail(key + ": " + e.what());
    }
  }
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
  std::uint64_t expected = 0;
  for (const Span& s : spans) {
    if (s.begin != expected)
      throw fail(s.name + " starts at " + std::to_string(s.begin) + ", expected " + std::to_string(expected) +
                 " (tensors must be back to back)");
    expected = s.end;
  }
  if (expected != b.size() - file.data_start_)
    throw fail("the tensors cover " + std::to_string(expected) + " of the " +
               std::to_string(b.size() - file.data_start_) + " data bytes");
  return file;
}

const SafetensorsFile::Entry& SafetensorsFile::at(const std::string& name) const {
  const auto it = tensors_.find(name);
  if (it == tensors_.end()) throw std::runtime_error(name_ + ": no tensor named '" + name + "'");
  return it->second;
}

}  // namespace flashtrain::trainer

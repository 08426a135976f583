// Private: a read-only memory map of a whole file.
#pragma once

#include <cstdint>
#include <string>

namespace flashtrain::data {

class MappedFile {
 public:
  // Throws DataError if the file cannot be opened or mapped.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const unsigned char* data() const { return data_; }
  std::uint64_t size() const { return size_; }

 private:
  const unsigned char* data_ = nullptr;
  std::uint64_t size_ = 0;
};

}  // namespace flashtrain::data

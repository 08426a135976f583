// Writes a file so that readers see either the old file or the complete new
// one, never a partial write: the bytes go to a temporary file in the same
// directory, which commit() flushes, fsyncs and renames over the final path.
//
//   AtomicFileWriter out("shard.bin");
//   out.write(bytes, n);
//   out.commit();          // without commit the temporary file is removed
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace flashtrain::data {

class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::string path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  // Appends bytes (buffered).
  void write(const void* data, std::size_t bytes);
  // Overwrites bytes at `offset` of what was written so far (e.g. a header
  // whose fields are known only at the end).
  void write_at(std::uint64_t offset, const void* data, std::size_t bytes);
  // Flushes, fsyncs, renames onto the final path and fsyncs the directory.
  void commit();

  std::uint64_t bytes_written() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  void flush_buffer();
  void discard() noexcept;

  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::vector<char> buffer_;
  bool committed_ = false;
};

// Writes `contents` to `path` atomically.
void write_file_atomically(const std::string& path, std::string_view contents);

}  // namespace flashtrain::data

#include "flashtrain/data/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <utility>

#include "system_error.h"

namespace flashtrain::data {
namespace {

constexpr std::size_t kBufferBytes = std::size_t{1} << 20;

std::string directory_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

void write_all(int fd, const char* data, std::size_t bytes, const std::string& path) {
  while (bytes > 0) {
    const ssize_t n = ::write(fd, data, bytes);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw system_error("cannot write", path);
    }
    data += n;
    bytes -= static_cast<std::size_t>(n);
  }
}

}  // namespace

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)) {
  if (path_.empty()) throw DataError("AtomicFileWriter: empty path");
  // mkstemp in the target's directory: rename() is atomic only within one
  // file system, and a unique name lets concurrent writers not collide.
  temp_path_ = path_ + ".tmp.XXXXXX";
  fd_ = ::mkstemp(temp_path_.data());
  if (fd_ < 0) throw system_error("cannot create a temporary file next to", path_);
  // mkstemp creates 0600; give the file the usual 0644. (Reading the umask
  // would mean setting it, which races with other threads creating files.)
  if (::fchmod(fd_, 0644) != 0) {
    const DataError error = system_error("cannot set the permissions of", temp_path_);
    discard();
    throw error;
  }
  buffer_.reserve(kBufferBytes);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (!committed_) discard();
}

void AtomicFileWriter::discard() noexcept {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
    ::unlink(temp_path_.c_str());
  }
}

void AtomicFileWriter::flush_buffer() {
  write_all(fd_, buffer_.data(), buffer_.size(), temp_path_);
  buffer_.clear();
}

void AtomicFileWriter::write(const void* data, std::size_t bytes) {
  if (committed_) throw DataError("write to '" + path_ + "' after commit");
  const char* p = static_cast<const char*>(data);
  if (buffer_.size() + bytes > kBufferBytes) flush_buffer();
  if (bytes >= kBufferBytes) {
    write_all(fd_, p, bytes, temp_path_);
  } else {
    buffer_.insert(buffer_.end(), p, p + bytes);
  }
  size_ += bytes;
}

void AtomicFileWriter::write_at(std::uint64_t offset, const void* data, std::size_t bytes) {
  if (committed_) throw DataError("write to '" + path_ + "' after commit");
  if (offset + bytes > size_) {
    throw DataError("write_at past the end of '" + path_ + "': offset " + std::to_string(offset) +
                    " + " + std::to_string(bytes) + " bytes > " + std::to_string(size_) +
                    " bytes written");
  }
  flush_buffer();
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::pwrite(fd_, p, bytes, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw system_error("cannot write", temp_path_);
    }
    p += n;
    offset += static_cast<std::uint64_t>(n);
    bytes -= static_cast<std::size_t>(n);
  }
}

void AtomicFileWriter::commit() {
  if (committed_) return;
  flush_buffer();
  if (::fsync(fd_) != 0) throw system_error("cannot fsync", temp_path_);
  if (::close(fd_) != 0) {
    fd_ = -1;
    ::unlink(temp_path_.c_str());
    throw system_error("cannot close", temp_path_);
  }
  fd_ = -1;
  if (std::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    const DataError error = system_error("cannot rename '" + temp_path_ + "' to", path_);
    ::unlink(temp_path_.c_str());
    throw error;
  }
  committed_ = true;
  // Make the rename itself durable.
  const int dir = ::open(directory_of(path_).c_str(), O_RDONLY | O_DIRECTORY);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

void write_file_atomically(const std::string& path, std::string_view contents) {
  AtomicFileWriter out(path);
  out.write(contents.data(), contents.size());
  out.commit();
}

}  // namespace flashtrain::data

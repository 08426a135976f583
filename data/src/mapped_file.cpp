#include "mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "system_error.h"

namespace flashtrain::data {

MappedFile::MappedFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw system_error("cannot open", path);
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const DataError error = system_error("cannot stat", path);
    ::close(fd);
    throw error;
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    throw DataError("'" + path + "' is not a regular file");
  }
  size_ = static_cast<std::uint64_t>(info.st_size);
  if (size_ > 0) {  // mmap rejects length 0; an empty file maps to nothing
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const DataError error = system_error("cannot mmap", path);
      ::close(fd);
      throw error;
    }
    data_ = static_cast<const unsigned char*>(p);
  }
  ::close(fd);  // the mapping stays valid without the descriptor
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<unsigned char*>(data_), size_);
}

}  // namespace flashtrain::data

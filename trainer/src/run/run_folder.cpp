#include "flashtrain/trainer/run/run_folder.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>

#include "flashtrain/data/error.h"
#include "flashtrain/data/loader.h"
#include "flashtrain/data/shard_reader.h"
#include "flashtrain/data/tokenizer.h"

namespace flashtrain::trainer {
namespace fs = std::filesystem;

namespace {

constexpr const char* kLockFile = ".flashtrain.lock";

std::string read_small_file(const fs::path& path) {
  std::ifstream in(path);
  std::string text;
  std::getline(in, text);
  return text;
}

}  // namespace

RunFolderLock::RunFolderLock(const fs::path& folder, const std::string& key) {
  fs::create_directories(folder);
  const fs::path path = folder / kLockFile;
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error("cannot open the run lock " + path.string() + ": " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::close(fd_);
    fd_ = -1;
    if (error != EWOULDBLOCK)
      throw std::runtime_error("cannot lock " + path.string() + ": " + std::strerror(error));
    const std::string holder = read_small_file(path);
    throw std::runtime_error("another flashtrain run" + (holder.empty() ? "" : " (pid " + holder + ")") +
                             " is training in " + folder.string() +
                             "; wait for it to end or stop it, or set another " + key);
  }
  // The holder's pid, for the message above (the lock itself is the flock).
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size()))
    throw std::runtime_error("cannot write the run lock " + path.string() + ": " + std::strerror(errno));
}

RunFolderLock::~RunFolderLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

void check_writable(const fs::path& folder, const std::string& key) {
  std::error_code error;
  fs::create_directories(folder, error);
  if (error)
    throw std::runtime_error(key + ": cannot create " + folder.string() + ": " + error.message());
  const fs::path probe = folder / (".write-test-" + std::to_string(::getpid()));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw std::runtime_error(key + ": cannot write into " + folder.string() + ": " + std::strerror(errno));
  ::close(fd);
  fs::remove(probe, error);
}

void check_run_inputs(const config::ResolvedConfig& resolved) {
  const config::Config& c = resolved.config;
  if (!c.data.task.empty()) return;  // tasks are generated; no files
  for (const auto& [key, pattern] : {std::pair{"data.train_shards", &c.data.train_shards},
                                     std::pair{"data.val_shards", &c.data.val_shards}}) {
    if (pattern->empty()) continue;
    for (const std::string& path : data::find_shards(*pattern)) {
      try {
        data::ShardReader shard(path);
      } catch (const data::DataError& e) {
        throw resolved.error_at({key}, std::string(key) + ": " + e.what());
      }
    }
  }
  if (!c.tokenizer.path.empty()) {
    try {
      data::Tokenizer tokenizer(c.tokenizer.path);
    } catch (const data::DataError& e) {
      throw resolved.error_at({"tokenizer.path"}, std::string("tokenizer.path: ") + e.what() +
                                                      " (not a SentencePiece model; flashtrain prepare "
                                                      "--train-tokenizer makes one)");
    }
  }
}

}  // namespace flashtrain::trainer

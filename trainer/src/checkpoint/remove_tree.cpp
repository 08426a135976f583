#include "flashtrain/trainer/checkpoint/remove_tree.h"

#include <ftw.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

namespace flashtrain::trainer {
namespace {

// nftw's callback has no user pointer; the first failure goes here.
thread_local std::string g_failure;

int remove_entry(const char* path, const struct stat*, int, struct FTW*) {
  if (std::remove(path) != 0 && errno != ENOENT) {
    g_failure = std::string("cannot remove ") + path + ": " + std::strerror(errno);
    return 1;  // stops the walk
  }
  return 0;
}

}  // namespace

void remove_tree(const std::filesystem::path& path) {
  struct stat info;
  if (::lstat(path.c_str(), &info) != 0) {
    if (errno == ENOENT) return;
    throw std::runtime_error("cannot remove " + path.string() + ": " + std::strerror(errno));
  }
  g_failure.clear();
  // Depth first (children before their directory), not following symlinks.
  if (::nftw(path.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
    throw std::runtime_error(g_failure.empty() ? "cannot remove " + path.string() + ": " + std::strerror(errno)
                                               : g_failure);
}

}  // namespace flashtrain::trainer

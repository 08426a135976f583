// A scratch directory for a test, removed with everything in it at the end
// (by remove_tree: std::filesystem::remove_all crashes in torch-linked tests).
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "flashtrain/trainer/checkpoint/remove_tree.h"

namespace flashtrain::trainer::testing {

class ScratchDir {
 public:
  ScratchDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("flashtrain_trainer_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    remove_tree(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    try {
      remove_tree(path_);
    } catch (const std::exception&) {
    }
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write_file(const std::filesystem::path& path, const std::string& contents) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << contents;
}

}  // namespace flashtrain::trainer::testing

// A directory that appears complete or not at all, for checkpoints and exports.
//
// Files are written into a hidden staging directory next to the final path
// (".step_00000100.tmp-<pid>-<n>"); commit() writes manifest.json last (every
// file's size and FNV-1a checksum: the completion marker), fsyncs, and renames
// the staging directory onto the final path, which must not exist: nothing
// already saved is replaced. A crash at any point leaves either no final
// directory or a complete one; a StagedDirectory destroyed without commit()
// removes its staging directory.
//
//   StagedDirectory out("outputs/run/checkpoints/step_00000100", "checkpoint");
//   out.write_file("state.json", text);
//   StagedDirectory::File weights = out.create_file("model.safetensors");
//   weights.write(bytes, n);
//   weights.close();
//   out.commit();
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "flashtrain/trainer/checkpoint/checksum.h"

namespace flashtrain::data {
class AtomicFileWriter;
}

namespace flashtrain::trainer {

inline constexpr const char* kManifestFile = "manifest.json";

class StagedDirectory {
 public:
  class File {
   public:
    File(File&&) noexcept;
    ~File();
    void write(const void* data, std::size_t bytes);
    // Flushes and fsyncs the file and records it in the manifest.
    void close();

   private:
    friend class StagedDirectory;
    File(StagedDirectory* owner, std::string name);
    StagedDirectory* owner_;
    std::string name_;
    std::unique_ptr<data::AtomicFileWriter> writer_;
    Fnv1a64 checksum_;
  };

  // `kind` names what the directory holds ("checkpoint", "export"); it is
  // recorded in the manifest. Throws std::runtime_error if `final_path`
  // exists or the staging directory cannot be created.
  StagedDirectory(std::filesystem::path final_path, std::string kind);
  ~StagedDirectory();
  StagedDirectory(const StagedDirectory&) = delete;
  StagedDirectory& operator=(const StagedDirectory&) = delete;

  File create_file(const std::string& name);
  void write_file(const std::string& name, std::string_view contents);

  // Writes the manifest (with `extra` under "info"), makes everything durable
  // and renames the directory into place. Every File must be closed.
  void commit(const nlohmann::json& extra = nlohmann::json::object());

  const std::filesystem::path& final_path() const { return final_path_; }
  const std::filesystem::path& staging_path() const { return staging_path_; }

 private:
  void record(const std::string& name, std::uint64_t bytes, const std::string& checksum);

  std::filesystem::path final_path_;
  std::filesystem::path staging_path_;
  std::string kind_;
  nlohmann::json files_ = nlohmann::json::object();
  int open_files_ = 0;
  bool committed_ = false;
};

// A fresh staging path next to `final_path`: ".<name>.tmp-<pid>-<n>".
std::filesystem::path staging_path_for(const std::filesystem::path& final_path);

// Whether `name` is the name of a staging directory (".<name>.tmp-<pid>-<n>"),
// and the id of the process that made it.
bool is_staging_name(const std::string& name, long* pid = nullptr);

// Checks that `dir` holds a manifest and that every file it lists has the
// recorded size and checksum (`check_contents` false: sizes only). Returns the
// manifest; throws std::runtime_error naming the first problem.
nlohmann::json verify_manifest(const std::filesystem::path& dir, bool check_contents = true);

// fsync of a directory, so that a rename or a new entry in it is durable.
void sync_directory(const std::filesystem::path& dir);

}  // namespace flashtrain::trainer

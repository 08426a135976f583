#include "flashtrain/trainer/checkpoint/staged_directory.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <utility>

#include "flashtrain/data/atomic_file.h"
#include "flashtrain/trainer/checkpoint/remove_tree.h"

namespace flashtrain::trainer {
namespace fs = std::filesystem;
namespace {

std::runtime_error system_error(const std::string& what, const fs::path& path) {
  return std::runtime_error(what + " " + path.string() + ": " + std::strerror(errno));
}

// rename() that fails instead of replacing an existing target: renameat2 with
// RENAME_NOREPLACE, or, where the file system lacks it, a check just before.
void rename_no_replace(const fs::path& from, const fs::path& to) {
#ifdef RENAME_NOREPLACE
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return;
  if (errno != EINVAL && errno != ENOSYS) {
    if (errno == EEXIST) throw std::runtime_error(to.string() + " already exists; not replacing it");
    throw system_error("cannot rename " + from.string() + " to", to);
  }
#endif
  std::error_code ignored;
  if (fs::exists(to, ignored)) throw std::runtime_error(to.string() + " already exists; not replacing it");
  if (::rename(from.c_str(), to.c_str()) != 0) throw system_error("cannot rename " + from.string() + " to", to);
}

}  // namespace

void sync_directory(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) throw system_error("cannot open the directory", dir);
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) throw system_error("cannot fsync the directory", dir);
}

fs::path staging_path_for(const fs::path& final_path) {
  static std::atomic<unsigned> counter{0};
  const fs::path parent = final_path.has_parent_path() ? final_path.parent_path() : fs::path(".");
  return parent / ("." + final_path.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-" +
                   std::to_string(counter++));
}

bool is_staging_name(const std::string& name, long* pid) {
  const auto marker = name.rfind(".tmp-");
  if (name.empty() || name[0] != '.' || marker == std::string::npos) return false;
  long parsed = 0;
  int consumed = 0;
  unsigned counter = 0;
  if (std::sscanf(name.c_str() + marker, ".tmp-%ld-%u%n", &parsed, &counter, &consumed) != 2 ||
      name.size() != marker + std::size_t(consumed))
    return false;
  if (pid) *pid = parsed;
  return true;
}

// ---- File ----

StagedDirectory::File::File(StagedDirectory* owner, std::string name)
    : owner_(owner),
      name_(std::move(name)),
      writer_(std::make_unique<data::AtomicFileWriter>((owner->staging_path_ / name_).string())) {
  ++owner_->open_files_;
}

StagedDirectory::File::File(File&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)),
      name_(std::move(other.name_)),
      writer_(std::move(other.writer_)),
      checksum_(other.checksum_) {}

// A file destroyed without close() stays counted as open, so its directory
// cannot commit; the writer removes the partial file.
StagedDirectory::File::~File() = default;

void StagedDirectory::File::write(const void* data, std::size_t bytes) {
  if (!writer_) throw std::logic_error("StagedDirectory::File::write after close: " + name_);
  writer_->write(data, bytes);
  checksum_.update(data, bytes);
}

void StagedDirectory::File::close() {
  if (!writer_) throw std::logic_error("StagedDirectory::File closed twice: " + name_);
  const std::uint64_t bytes = writer_->bytes_written();
  writer_->commit();  // flush, fsync, rename inside the staging directory
  writer_.reset();
  --owner_->open_files_;
  owner_->record(name_, bytes, checksum_.hex());
}

// ---- StagedDirectory ----

StagedDirectory::StagedDirectory(fs::path final_path, std::string kind)
    : final_path_(std::move(final_path)), kind_(std::move(kind)) {
  if (final_path_.filename().empty()) final_path_ = final_path_.parent_path();
  std::error_code ignored;
  if (fs::exists(final_path_, ignored))
    throw std::runtime_error(final_path_.string() + " already exists; not replacing it");
  const fs::path parent = final_path_.has_parent_path() ? final_path_.parent_path() : fs::path(".");
  fs::create_directories(parent);
  staging_path_ = staging_path_for(final_path_);
  if (!fs::create_directory(staging_path_))
    throw std::runtime_error("staging directory " + staging_path_.string() + " already exists");
}

StagedDirectory::~StagedDirectory() {
  if (committed_) return;
  try {
    remove_tree(staging_path_);
  } catch (const std::exception&) {
    // A destructor must not throw; a stale staging directory is harmless
    // (it is no checkpoint) and removed by the next run that resumes.
  }
}

StagedDirectory::File StagedDirectory::create_file(const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos || name == kManifestFile)
    throw std::invalid_argument("StagedDirectory: bad file name '" + name + "'");
  if (files_.contains(name)) throw std::invalid_argument("StagedDirectory: " + name + " written twice");
  return File(this, name);
}

void StagedDirectory::write_file(const std::string& name, std::string_view contents) {
  File file = create_file(name);
  file.write(contents.data(), contents.size());
  file.close();
}

void StagedDirectory::record(const std::string& name, std::uint64_t bytes, const std::string& checksum) {
  files_[name] = {{"bytes", bytes}, {"fnv1a64", checksum}};
}

void StagedDirectory::commit(const nlohmann::json& extra) {
  if (committed_) throw std::logic_error("StagedDirectory committed twice: " + final_path_.string());
  if (open_files_ != 0)
    throw std::logic_error("StagedDirectory: a file is still open in " + staging_path_.string());
  const nlohmann::json manifest = {
      {"format", "flashtrain-manifest"}, {"version", 1}, {"kind", kind_}, {"files", files_}, {"info", extra}};
  // The manifest is written last: a directory without one was never finished.
  data::write_file_atomically((staging_path_ / kManifestFile).string(), manifest.dump(2) + "\n");
  sync_directory(staging_path_);
  rename_no_replace(staging_path_, final_path_);
  committed_ = true;
  sync_directory(final_path_.has_parent_path() ? final_path_.parent_path() : fs::path("."));
}

nlohmann::json verify_manifest(const fs::path& dir, bool check_contents) {
  const fs::path manifest_path = dir / kManifestFile;
  std::error_code error;
  if (!fs::exists(dir, error)) throw std::runtime_error(dir.string() + " does not exist");
  if (!fs::is_directory(dir, error))
    throw std::runtime_error(dir.string() + " is not a directory (a checkpoint or an export is one)");
  if (!fs::is_regular_file(manifest_path, error))
    throw std::runtime_error(dir.string() + " has no " + kManifestFile + " (an interrupted save?)");
  nlohmann::json manifest;
  try {
    std::ifstream in(manifest_path);
    manifest = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(manifest_path.string() + " is not valid JSON: " + e.what());
  }
  if (!manifest.is_object() || manifest.value("format", "") != "flashtrain-manifest" ||
      !manifest.contains("files") || !manifest["files"].is_object())
    throw std::runtime_error(manifest_path.string() + " is not a flashtrain manifest");
  for (const auto& [name, entry] : manifest["files"].items()) {
    const fs::path file = dir / name;
    const auto size = fs::file_size(file, error);
    if (error) throw std::runtime_error(dir.string() + ": " + name + " is missing (" + error.message() + ")");
    const auto want = entry.at("bytes").get<std::uint64_t>();
    if (size != want)
      throw std::runtime_error(file.string() + " has " + std::to_string(size) + " bytes; the manifest says " +
                               std::to_string(want));
    if (!check_contents) continue;
    const std::string checksum = fnv1a64_of_file(file.string());
    if (checksum != entry.at("fnv1a64").get<std::string>())
      throw std::runtime_error(file.string() + " is corrupt: FNV-1a checksum " + checksum +
                               ", the manifest says " + entry.at("fnv1a64").get<std::string>());
  }
  return manifest;
}

}  // namespace flashtrain::trainer

#include "flashrnn/tune/tuning_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

namespace flashrnn::tune {
namespace {

using nlohmann::json;

constexpr const char* kFormat = "flashtune-cache";
constexpr int kVersion = 1;

json to_json(const CacheKey& key, const CachedChoice& c) {
  const FusedDecisions& d = c.decisions;
  return json{{"device", key.device},
              {"cell", std::string(to_string(key.cell))},
              {"dtype", std::string(to_string(key.dtype))},
              {"heads", key.heads},
              {"head_dim", key.head_dim},
              {"batch_class", key.batch_class},
              {"decisions",
               {{"ctas_per_head", d.ctas_per_head},
                {"exchange", std::string(to_string(d.exchange))},
                {"heads_per_cta", d.heads_per_cta},
                {"batch_tile", d.batch_tile},
                {"k_split", d.k_split},
                {"units_per_warp", d.units_per_warp},
                {"k_reg", d.k_reg}}},
              {"time_ms", c.time_ms},
              {"candidates_timed", c.candidates_timed}};
}

// Throws (json or ProblemError) when a field is missing or has the wrong type.
std::pair<CacheKey, CachedChoice> from_json(const json& e) {
  CacheKey key;
  key.device = e.at("device").get<std::string>();
  key.cell = parse_cell(e.at("cell").get<std::string>());
  key.dtype = parse_dtype(e.at("dtype").get<std::string>());
  key.heads = e.at("heads").get<int>();
  key.head_dim = e.at("head_dim").get<int>();
  key.batch_class = e.at("batch_class").get<int>();
  const json& d = e.at("decisions");
  CachedChoice c;
  c.decisions.ctas_per_head = d.at("ctas_per_head").get<int>();
  c.decisions.exchange = parse_head_exchange(d.at("exchange").get<std::string>());
  c.decisions.heads_per_cta = d.at("heads_per_cta").get<int>();
  c.decisions.batch_tile = d.at("batch_tile").get<int>();
  c.decisions.k_split = d.at("k_split").get<int>();
  c.decisions.units_per_warp = d.at("units_per_warp").get<int>();
  c.decisions.k_reg = d.at("k_reg").get<int>();
  c.time_ms = e.at("time_ms").get<double>();
  c.candidates_timed = e.at("candidates_timed").get<int>();
  return {key, c};
}

[[noreturn]] void fail_io(const std::string& what, const std::string& path) {
  throw std::runtime_error("tuning cache: cannot " + what + " '" + path + "': " +
                           std::strerror(errno));
}

// Holds an exclusive flock on `path` (a separate lock file, so that the cache
// file itself can be replaced by rename while the lock is held).
class FileLock {
 public:
  explicit FileLock(const std::string& path) : fd_(::open(path.c_str(), O_RDWR | O_CREAT, 0644)) {
    if (fd_ < 0) fail_io("open the lock file", path);
    while (::flock(fd_, LOCK_EX) != 0)
      if (errno != EINTR) {
        ::close(fd_);
        fail_io("lock", path);
      }
  }
  ~FileLock() { ::close(fd_); }  // closing releases the lock
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

// A name no other writer (process or thread) uses at the same time.
std::string temporary_name(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  std::ostringstream s;
  s << path << ".tmp." << ::getpid() << "." << std::hash<std::thread::id>{}(std::this_thread::get_id())
    << "." << counter++;
  return s.str();
}

void write_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = temporary_name(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0) fail_io("create", tmp);
  size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      ::unlink(tmp.c_str());
      fail_io("write", tmp);
    }
    written += size_t(n);
  }
  // On disk before it replaces the old file: a crash leaves one or the other.
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    fail_io("flush", tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    fail_io("rename a temporary file onto", path);
  }
}

}  // namespace

int batch_class(int batch) {
  int c = 16;
  while (c < batch && c < (1 << 30)) c *= 2;
  return c;
}

CacheKey CacheKey::of(const DeviceProps& device, const FusedShape& shape) {
  return CacheKey{device.name, shape.cell,     shape.dtype,
                  shape.heads, shape.head_dim, tune::batch_class(shape.batch)};
}

std::string CacheKey::to_string() const {
  return device + " | " + std::string(tune::to_string(cell)) + " " +
         std::string(tune::to_string(dtype)) + " " + std::to_string(heads) + "x" +
         std::to_string(head_dim) + " batch<=" + std::to_string(batch_class);
}

std::string TuningCache::default_path() {
  if (const char* explicit_path = std::getenv("FLASHTUNE_CACHE"); explicit_path && *explicit_path)
    return explicit_path;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/flashtrain/tune.json";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.cache/flashtrain/tune.json";
}

TuningCache TuningCache::load(const std::string& path, std::string* warning) {
  TuningCache cache(path);
  auto warn = [&](const std::string& what) {
    if (warning) *warning = "tuning cache '" + path + "': " + what;
  };
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (std::filesystem::exists(path)) warn("cannot be read; starting empty");
    return cache;
  }
  std::ostringstream text;
  text << in.rdbuf();
  const json doc = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    warn("is not valid JSON (corrupt?); starting empty");
    return cache;
  }
  if (!doc.is_object() || doc.value("format", "") != kFormat ||
      !doc.contains("entries") || !doc["entries"].is_array()) {
    warn(std::string("is not a ") + kFormat + " file; starting empty");
    return cache;
  }
  if (doc.value("version", 0) != kVersion) {
    warn("has version " + doc.value("version", json()).dump() + ", this build reads version " +
         std::to_string(kVersion) + "; starting empty");
    return cache;
  }
  size_t skipped = 0;
  for (const json& e : doc["entries"]) {
    try {
      auto [key, choice] = from_json(e);
      cache.put(key, choice);
    } catch (const std::exception&) {
      ++skipped;
    }
  }
  if (skipped) warn("skipped " + std::to_string(skipped) + " malformed entr" +
                    (skipped == 1 ? "y" : "ies"));
  return cache;
}

const CachedChoice* TuningCache::find(const CacheKey& key) const {
  auto it = entries_.find(key.to_string());
  return it == entries_.end() ? nullptr : &it->second.choice;
}

void TuningCache::put(const CacheKey& key, const CachedChoice& choice) {
  entries_[key.to_string()] = Entry{key, choice};
}

void TuningCache::save() {
  if (path_.empty()) throw std::runtime_error("tuning cache: save() needs a path");
  const std::filesystem::path parent = std::filesystem::path(path_).parent_path();
  std::error_code error;
  if (!parent.empty()) std::filesystem::create_directories(parent, error);
  if (error)
    throw std::runtime_error("tuning cache: cannot create '" + parent.string() +
                             "': " + error.message());

  FileLock lock(path_ + ".lock");
  // Entries another writer saved since this cache was loaded are kept.
  TuningCache merged = load(path_);
  for (const auto& [name, entry] : entries_) merged.entries_[name] = entry;
  json doc{{"format", kFormat}, {"version", kVersion}, {"entries", json::array()}};
  for (const auto& [name, entry] : merged.entries_)
    doc["entries"].push_back(to_json(entry.key, entry.choice));
  write_atomically(path_, doc.dump(2) + "\n");
  entries_ = std::move(merged.entries_);
}

}  // namespace flashrnn::tune

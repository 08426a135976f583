// Timed refinement results, cached per (device, cell, shape class) in a JSON
// file (README.md shows the format). Safe against concurrent writers (an
// exclusive lock around read-merge-write) and against crashes and readers
// (write a temporary file, then rename it over the old one); a corrupt or
// unreadable file reads as an empty cache with a warning, it never stops the op.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "flashrnn/tune/device_props.h"
#include "flashrnn/tune/fused_config.h"
#include "flashrnn/tune/fused_shape.h"

namespace flashrnn::tune {

// Batches share a cached choice within a power-of-two class: 1..16 -> 16,
// 17..32 -> 32, 33..64 -> 64, ...
int batch_class(int batch);

struct CacheKey {
  std::string device;  // DeviceProps::name
  Cell cell = Cell::kLstm;
  DType dtype = DType::kBf16;
  int heads = 0;
  int head_dim = 0;
  int batch_class = 0;

  static CacheKey of(const DeviceProps& device, const FusedShape& shape);
  // "NVIDIA H100 80GB HBM3 | lstm bf16 12x64 batch<=16".
  std::string to_string() const;
};

struct CachedChoice {
  FusedDecisions decisions;
  double time_ms = 0;        // what the timer measured for it
  int candidates_timed = 0;  // how many candidates it was chosen from
};

class TuningCache {
 public:
  // $FLASHTUNE_CACHE if set, else $XDG_CACHE_HOME/flashtrain/tune.json, else
  // $HOME/.cache/flashtrain/tune.json.
  static std::string default_path();
  // A missing file gives an empty cache. An unreadable or corrupt one does too,
  // and so do entries that cannot be read; `warning` (if given) then says what
  // was wrong, with the path.
  static TuningCache load(const std::string& path, std::string* warning = nullptr);

  explicit TuningCache(std::string path = {}) : path_(std::move(path)) {}
  const std::string& path() const { return path_; }

  const CachedChoice* find(const CacheKey& key) const;
  void put(const CacheKey& key, const CachedChoice& choice);
  size_t size() const { return entries_.size(); }

  // Merges this cache into the file at path() (this cache's entries win) and
  // takes the merged entries. Creates missing directories. Throws
  // std::runtime_error naming the path when the file cannot be written.
  void save();

 private:
  struct Entry {
    CacheKey key;
    CachedChoice choice;
  };
  std::string path_;
  std::map<std::string, Entry> entries_;  // by CacheKey::to_string()
};

}  // namespace flashrnn::tune

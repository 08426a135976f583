// Where a ShardLoader stands, for exact resume. It is the same on every rank
// (ranks advance in lockstep), so a checkpoint needs only one copy. Saved as
// JSON through nlohmann's to_json / from_json hooks:
//
//   nlohmann::json j = loader.cursor();           // save
//   loader.restore(j.get<LoaderCursor>());        // resume
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace flashtrain::data {

struct LoaderCursor {
  // What the stream depends on; restore() refuses a cursor that disagrees.
  std::uint64_t seed = 0;
  bool shuffle = true;
  std::int64_t sequence_length = 0;  // T
  std::int64_t shard_count = 0;
  std::int64_t total_tokens = 0;
  std::string data_fingerprint;      // of the shards' file names and token counts
  // The position.
  std::int64_t epoch = 0;
  std::int64_t windows_consumed = 0;  // in this epoch, by all ranks together

  bool operator==(const LoaderCursor& other) const;
};

void to_json(nlohmann::json& j, const LoaderCursor& cursor);
// Throws DataError naming a missing or mistyped key.
void from_json(const nlohmann::json& j, LoaderCursor& cursor);

}  // namespace flashtrain::data

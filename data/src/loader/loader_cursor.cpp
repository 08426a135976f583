#include "flashtrain/data/loader_cursor.h"

#include <nlohmann/json.hpp>

#include "flashtrain/data/error.h"

namespace flashtrain::data {
namespace {

constexpr int kCursorVersion = 1;

template <typename T>
T required(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) throw DataError("loader cursor: expected a JSON object, found " + std::string(j.type_name()));
  const auto it = j.find(key);
  if (it == j.end()) throw DataError(std::string("loader cursor: missing key '") + key + "'");
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception&) {
    throw DataError(std::string("loader cursor: key '") + key + "' has the wrong type (" +
                    it->type_name() + ")");
  }
}

}  // namespace

bool LoaderCursor::operator==(const LoaderCursor& o) const {
  return seed == o.seed && shuffle == o.shuffle && sequence_length == o.sequence_length &&
         shard_count == o.shard_count && total_tokens == o.total_tokens &&
         data_fingerprint == o.data_fingerprint && epoch == o.epoch &&
         windows_consumed == o.windows_consumed;
}

void to_json(nlohmann::json& j, const LoaderCursor& c) {
  j = nlohmann::json{{"version", kCursorVersion},
                     {"seed", c.seed},
                     {"shuffle", c.shuffle},
                     {"sequence_length", c.sequence_length},
                     {"shard_count", c.shard_count},
                     {"total_tokens", c.total_tokens},
                     {"data_fingerprint", c.data_fingerprint},
                     {"epoch", c.epoch},
                     {"windows_consumed", c.windows_consumed}};
}

void from_json(const nlohmann::json& j, LoaderCursor& c) {
  const int version = required<int>(j, "version");
  if (version != kCursorVersion) {
    throw DataError("loader cursor: version " + std::to_string(version) + ", expected " +
                    std::to_string(kCursorVersion));
  }
  c.seed = required<std::uint64_t>(j, "seed");
  c.shuffle = required<bool>(j, "shuffle");
  c.sequence_length = required<std::int64_t>(j, "sequence_length");
  c.shard_count = required<std::int64_t>(j, "shard_count");
  c.total_tokens = required<std::int64_t>(j, "total_tokens");
  c.data_fingerprint = required<std::string>(j, "data_fingerprint");
  c.epoch = required<std::int64_t>(j, "epoch");
  c.windows_consumed = required<std::int64_t>(j, "windows_consumed");
}

}  // namespace flashtrain::data

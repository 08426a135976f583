#include "shard_sequence.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <regex>

#include "flashtrain/data/error.h"

namespace flashtrain::data {

ShardSequence::ShardSequence(std::string directory, std::string prefix, TokenFormat format,
                             std::int64_t shard_tokens)
    : directory_(std::move(directory)), prefix_(std::move(prefix)), format_(format),
      shard_tokens_(shard_tokens) {
  if (shard_tokens_ < 1 || shard_tokens_ > kMaxShardTokens) {
    throw DataError("shard_tokens must be in [1, 2^31 - 1], got " + std::to_string(shard_tokens_));
  }
}

std::string ShardSequence::shard_name(const std::string& prefix, std::size_t index) {
  char number[16];
  std::snprintf(number, sizeof number, "%06zu", index);
  return prefix + "_" + number + ".bin";
}

void ShardSequence::append(const std::vector<std::int32_t>& tokens) {
  std::size_t offset = 0;
  while (offset < tokens.size()) {
    if (!current_) {
      const std::string path =
          (std::filesystem::path(directory_) / shard_name(prefix_, written_.size())).string();
      current_ = std::make_unique<ShardWriter>(path, format_);
      written_.push_back(path);
    }
    const auto room = static_cast<std::size_t>(shard_tokens_ - current_->token_count());
    const std::size_t take = std::min(room, tokens.size() - offset);
    current_->append(tokens.data() + offset, take);
    offset += take;
    if (current_->token_count() == shard_tokens_) {
      current_->commit();
      current_.reset();
    }
  }
}

std::vector<std::string> ShardSequence::finish() {
  if (current_) {
    current_->commit();
    current_.reset();
  }
  return written_;
}

void remove_stale_shards(const std::string& directory, const std::string& prefix,
                         const std::vector<std::string>& keep) {
  const std::regex pattern(prefix + "_[0-9]{6}\\.bin");
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    const std::string name = entry.path().filename().string();
    if (!std::regex_match(name, pattern)) continue;
    const bool kept = std::any_of(keep.begin(), keep.end(), [&](const std::string& path) {
      return std::filesystem::path(path).filename() == name;
    });
    if (!kept) std::filesystem::remove(entry.path());
  }
}

}  // namespace flashtrain::data

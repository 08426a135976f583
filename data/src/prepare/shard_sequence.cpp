#include "shard_sequence.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <regex>

#include "flashtrain/data/error.h"

namespace flashtrain::data {

ShardSequence::ShardSequence(std::string directory, std::string prefix, TokenFormat format,
                             std::int64_t shard_tokens, NewShardHook before_new_shard)
    : directory_(std::move(directory)), prefix_(std::move(prefix)), format_(format),
      shard_tokens_(shard_tokens), before_new_shard_(std::move(before_new_shard)) {
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
      const std::string name = shard_name(prefix_, written_.size());
      if (before_new_shard_) before_new_shard_(name);
      const std::string path = (std::filesystem::path(directory_) / name).string();
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

bool is_shard_name(const std::string& name, const std::string& prefix) {
  static const std::regex number("_[0-9]{6}\\.bin");
  return name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 &&
         std::regex_match(name.substr(prefix.size()), number);
}

std::vector<std::string> shard_files_in(const std::string& directory, const std::string& prefix) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    std::string name = entry.path().filename().string();
    if (is_shard_name(name, prefix)) names.push_back(std::move(name));
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace flashtrain::data

#include "flashtrain/data/shard_writer.h"

#include <utility>

#include "flashtrain/data/error.h"

namespace flashtrain::data {

ShardWriter::ShardWriter(std::string path, TokenFormat format)
    : file_(std::move(path)), format_(format) {
  // The count is known only at commit; reserve the header now.
  const ShardHeaderBytes header = encode_shard_header({format_, 0});
  file_.write(header.data(), header.size());
}

void ShardWriter::append(const std::int32_t* tokens, std::size_t count) {
  const TokenFormatInfo info = format_info(format_);
  if (static_cast<std::int64_t>(count) > kMaxShardTokens - token_count_) {
    throw DataError("shard '" + file_.path() + "' would exceed " +
                    std::to_string(kMaxShardTokens) + " tokens (llm.c's int32 count); " +
                    "start a new shard");
  }
  // Validate the whole chunk first so a bad token leaves the shard unchanged.
  for (std::size_t i = 0; i < count; ++i) {
    if (tokens[i] < 0 || static_cast<std::uint32_t>(tokens[i]) > info.max_token) {
      throw DataError("token " + std::to_string(tokens[i]) + " at index " +
                      std::to_string(token_count_ + static_cast<std::int64_t>(i)) +
                      " of shard '" + file_.path() + "' does not fit " +
                      std::string(to_string(format_)) + " (0.." + std::to_string(info.max_token) +
                      ")");
    }
  }
  scratch_.resize(count * info.token_bytes);
  unsigned char* p = scratch_.data();
  for (std::size_t i = 0; i < count; ++i) {
    const auto t = static_cast<std::uint32_t>(tokens[i]);
    for (std::size_t b = 0; b < info.token_bytes; ++b) *p++ = static_cast<unsigned char>(t >> (8 * b));
  }
  file_.write(scratch_.data(), scratch_.size());
  token_count_ += static_cast<std::int64_t>(count);
}

void ShardWriter::commit() {
  const ShardHeaderBytes header = encode_shard_header({format_, token_count_});
  file_.write_at(0, header.data(), header.size());
  file_.commit();
}

void write_shard(const std::string& path, TokenFormat format,
                 const std::vector<std::int32_t>& tokens) {
  ShardWriter out(path, format);
  out.append(tokens);
  out.commit();
}

}  // namespace flashtrain::data

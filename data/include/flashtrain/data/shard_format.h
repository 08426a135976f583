// Token shards in llm.c's format, so shards made by llm.c's scripts load here
// and ours load there:
//
//   header: 256 little-endian int32 = 1024 bytes
//     [0] magic   [1] version   [2] token count   [3..255] zero
//   then `token count` tokens, little-endian:
//     gpt-2 layout:   magic 20240520, version 1, uint16 tokens
//     llama-3 layout: magic 20240801, version 7, uint32 tokens
//
// The token count is an int32, so a shard holds at most 2^31 - 1 tokens.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace flashtrain::data {

enum class TokenFormat {
  kUint16,  // llm.c's gpt-2 layout
  kUint32,  // llm.c's llama-3 layout
};

inline constexpr std::size_t kShardHeaderInts = 256;
inline constexpr std::size_t kShardHeaderBytes = kShardHeaderInts * 4;
inline constexpr std::int64_t kMaxShardTokens = 2147483647;  // int32 count field

struct TokenFormatInfo {
  std::int32_t magic;
  std::int32_t version;
  std::size_t token_bytes;
  std::uint32_t max_token;  // largest token id the width holds
};

TokenFormatInfo format_info(TokenFormat format);
std::string_view to_string(TokenFormat format);  // "uint16" / "uint32"

// The narrowest format whose tokens hold every id in [0, vocab_size).
TokenFormat format_for_vocab_size(std::int64_t vocab_size);

struct ShardHeader {
  TokenFormat format;
  std::int64_t token_count;
};

using ShardHeaderBytes = std::array<unsigned char, kShardHeaderBytes>;

ShardHeaderBytes encode_shard_header(const ShardHeader& header);

// Decodes and validates a header read from `path`, whose size is `file_size`:
// known magic, the version that goes with it, a non-negative count, and
// file_size == 1024 + count * token width. Throws DataError naming the file
// and what was expected and found (truncated file, foreign file, ...).
ShardHeader decode_shard_header(const unsigned char* bytes, std::uint64_t file_size,
                                const std::string& path);

}  // namespace flashtrain::data

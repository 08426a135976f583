#include "flashtrain/data/shard_format.h"

#include "flashtrain/data/error.h"

namespace flashtrain::data {
namespace {

constexpr std::int32_t kUint16Magic = 20240520;
constexpr std::int32_t kUint16Version = 1;
constexpr std::int32_t kUint32Magic = 20240801;
constexpr std::int32_t kUint32Version = 7;

// The header is little-endian on disk whatever the host's byte order.
std::int32_t load_le32(const unsigned char* p) {
  const std::uint32_t u = std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 |
                          std::uint32_t{p[2]} << 16 | std::uint32_t{p[3]} << 24;
  return static_cast<std::int32_t>(u);
}

void store_le32(unsigned char* p, std::int32_t value) {
  const auto u = static_cast<std::uint32_t>(value);
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(u >> (8 * i));
}

}  // namespace

TokenFormatInfo format_info(TokenFormat format) {
  switch (format) {
    case TokenFormat::kUint16: return {kUint16Magic, kUint16Version, 2, 0xFFFFu};
    case TokenFormat::kUint32: return {kUint32Magic, kUint32Version, 4, 0xFFFFFFFFu};
  }
  throw DataError("unknown TokenFormat");
}

std::string_view to_string(TokenFormat format) {
  return format == TokenFormat::kUint16 ? "uint16" : "uint32";
}

TokenFormat format_for_vocab_size(std::int64_t vocab_size) {
  if (vocab_size <= 0) {
    throw DataError("vocab size must be positive, got " + std::to_string(vocab_size));
  }
  return vocab_size <= 65536 ? TokenFormat::kUint16 : TokenFormat::kUint32;
}

ShardHeaderBytes encode_shard_header(const ShardHeader& header) {
  if (header.token_count < 0 || header.token_count > kMaxShardTokens) {
    throw DataError("shard token count " + std::to_string(header.token_count) +
                    " is outside [0, 2^31 - 1]");
  }
  const TokenFormatInfo info = format_info(header.format);
  ShardHeaderBytes bytes{};
  store_le32(&bytes[0], info.magic);
  store_le32(&bytes[4], info.version);
  store_le32(&bytes[8], static_cast<std::int32_t>(header.token_count));
  return bytes;
}

ShardHeader decode_shard_header(const unsigned char* bytes, std::uint64_t file_size,
                                const std::string& path) {
  const std::string where = "token shard '" + path + "'";
  if (file_size < kShardHeaderBytes) {
    throw DataError(where + " is truncated or not a shard: it has " + std::to_string(file_size) +
                    " bytes, the header alone needs " + std::to_string(kShardHeaderBytes));
  }
  const std::int32_t magic = load_le32(bytes);
  const std::int32_t version = load_le32(bytes + 4);
  const std::int32_t count = load_le32(bytes + 8);

  ShardHeader header{};
  if (magic == kUint16Magic) {
    header.format = TokenFormat::kUint16;
  } else if (magic == kUint32Magic) {
    header.format = TokenFormat::kUint32;
  } else {
    throw DataError(where + " is not an llm.c token shard: magic at byte 0 is " +
                    std::to_string(magic) + ", expected " + std::to_string(kUint16Magic) +
                    " (uint16 tokens) or " + std::to_string(kUint32Magic) + " (uint32 tokens)");
  }
  const TokenFormatInfo info = format_info(header.format);
  if (version != info.version) {
    throw DataError(where + " has magic " + std::to_string(magic) + " but version " +
                    std::to_string(version) + " at byte 4, expected " +
                    std::to_string(info.version));
  }
  if (count < 0) {
    throw DataError(where + " has a negative token count " + std::to_string(count) +
                    " at byte 8");
  }
  header.token_count = count;
  const std::uint64_t expected =
      kShardHeaderBytes + static_cast<std::uint64_t>(count) * info.token_bytes;
  if (file_size != expected) {
    throw DataError(where + " should be " + std::to_string(expected) + " bytes (1024-byte header + " +
                    std::to_string(count) + " " + std::string(to_string(header.format)) +
                    " tokens) but is " + std::to_string(file_size) + " bytes" +
                    (file_size < expected ? " (truncated)" : " (trailing bytes)"));
  }
  return header;
}

}  // namespace flashtrain::data

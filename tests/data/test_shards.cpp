// Token shards: llm.c layout byte for byte, round trips, atomic writes, and
// clear errors for truncated and foreign files.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "flashtrain/data/error.h"
#include "flashtrain/data/shard_format.h"
#include "flashtrain/data/shard_reader.h"
#include "flashtrain/data/shard_writer.h"
#include "test_util.h"

namespace flashtrain::data {
namespace {

using testing::expect_error;
using testing::read_bytes;
using testing::ScratchDir;
using testing::write_bytes;

// The bytes llm.c's write_datafile produces: 256 int32 (magic, version, count,
// zeros) followed by the tokens, little-endian (this test runs on x86/ARM).
template <typename Token>
std::vector<unsigned char> llmc_bytes(std::int32_t magic, std::int32_t version,
                                      const std::vector<Token>& tokens) {
  std::vector<std::int32_t> header(256, 0);
  header[0] = magic;
  header[1] = version;
  header[2] = static_cast<std::int32_t>(tokens.size());
  std::vector<unsigned char> bytes(1024 + tokens.size() * sizeof(Token));
  std::memcpy(bytes.data(), header.data(), 1024);
  if (!tokens.empty()) std::memcpy(bytes.data() + 1024, tokens.data(), tokens.size() * sizeof(Token));
  return bytes;
}

std::vector<std::int32_t> read_all(const ShardReader& shard) {
  std::vector<std::int32_t> out(static_cast<std::size_t>(shard.token_count()));
  shard.read(0, shard.token_count(), out.data());
  return out;
}

TEST(ShardFormat, Uint16ShardIsByteIdenticalToLlmc) {
  ScratchDir dir;
  const std::vector<std::int32_t> tokens = {0, 1, 50256, 65535, 7, 300};
  write_shard(dir.file("a.bin"), TokenFormat::kUint16, tokens);
  const std::vector<std::uint16_t> narrow(tokens.begin(), tokens.end());
  EXPECT_EQ(read_bytes(dir.file("a.bin")), llmc_bytes<std::uint16_t>(20240520, 1, narrow));
}

TEST(ShardFormat, Uint32ShardIsByteIdenticalToLlmcLlama3) {
  ScratchDir dir;
  const std::vector<std::int32_t> tokens = {128000, 0, 65536, 2147483647};
  write_shard(dir.file("a.bin"), TokenFormat::kUint32, tokens);
  const std::vector<std::uint32_t> wide(tokens.begin(), tokens.end());
  EXPECT_EQ(read_bytes(dir.file("a.bin")), llmc_bytes<std::uint32_t>(20240801, 7, wide));
}

TEST(ShardFormat, ReadsShardsWrittenTheLlmcWay) {
  ScratchDir dir;
  const std::vector<std::uint16_t> small = {3, 1, 4, 1, 5, 9, 2, 6};
  write_bytes(dir.file("gpt2.bin"), llmc_bytes<std::uint16_t>(20240520, 1, small));
  ShardReader gpt2(dir.file("gpt2.bin"));
  EXPECT_EQ(gpt2.format(), TokenFormat::kUint16);
  EXPECT_EQ(read_all(gpt2), std::vector<std::int32_t>(small.begin(), small.end()));

  const std::vector<std::uint32_t> large = {128000, 128001, 42};
  write_bytes(dir.file("llama.bin"), llmc_bytes<std::uint32_t>(20240801, 7, large));
  ShardReader llama(dir.file("llama.bin"));
  EXPECT_EQ(llama.format(), TokenFormat::kUint32);
  EXPECT_EQ(llama.token_count(), 3);
  EXPECT_EQ(llama.token(0), 128000u);
  EXPECT_EQ(read_all(llama), std::vector<std::int32_t>(large.begin(), large.end()));
}

TEST(ShardFormat, FormatForVocabSizeUsesTheNarrowestWidth) {
  EXPECT_EQ(format_for_vocab_size(50257), TokenFormat::kUint16);
  EXPECT_EQ(format_for_vocab_size(65536), TokenFormat::kUint16);  // ids 0..65535
  EXPECT_EQ(format_for_vocab_size(65537), TokenFormat::kUint32);
  EXPECT_THROW(format_for_vocab_size(0), DataError);
}

TEST(ShardReader, RoundTripsManyTokensAndSubranges) {
  ScratchDir dir;
  std::vector<std::int32_t> tokens(100000);
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<std::int32_t>((i * 7919) % 65536);
  {
    ShardWriter out(dir.file("s.bin"), TokenFormat::kUint16);
    // Several appends of uneven sizes, as a streaming producer would do.
    out.append(tokens.data(), 1);
    out.append(tokens.data() + 1, 49999);
    out.append(tokens.data() + 50000, 50000);
    EXPECT_EQ(out.token_count(), 100000);
    out.commit();
  }
  ShardReader shard(dir.file("s.bin"));
  ASSERT_EQ(shard.token_count(), 100000);
  EXPECT_EQ(read_all(shard), tokens);
  std::vector<std::int32_t> window(17);
  shard.read(99983, 17, window.data());
  EXPECT_TRUE(std::equal(window.begin(), window.end(), tokens.begin() + 99983));
  EXPECT_EQ(shard.token(12345), static_cast<std::uint32_t>(tokens[12345]));
}

TEST(ShardReader, EmptyShardIsValid) {
  ScratchDir dir;
  write_shard(dir.file("e.bin"), TokenFormat::kUint16, {});
  ShardReader shard(dir.file("e.bin"));
  EXPECT_EQ(shard.token_count(), 0);
  EXPECT_EQ(read_bytes(dir.file("e.bin")).size(), 1024u);
}

TEST(ShardReader, RangeOutsideTheShardIsAnError) {
  ScratchDir dir;
  write_shard(dir.file("s.bin"), TokenFormat::kUint16, {1, 2, 3});
  ShardReader shard(dir.file("s.bin"));
  std::vector<std::int32_t> out(4);
  expect_error<DataError>([&] { shard.read(1, 3, out.data()); }, {"[1, 4)", "3 tokens", "s.bin"});
  expect_error<DataError>([&] { shard.read(-1, 1, out.data()); }, {"outside"});
  expect_error<DataError>([&] { shard.token(3); }, {"[3, 4)"});
}

TEST(ShardReader, Uint32TokenBeyondInt32IsAnError) {
  ScratchDir dir;
  write_bytes(dir.file("big.bin"), llmc_bytes<std::uint32_t>(20240801, 7, {5, 0x80000000u}));
  ShardReader shard(dir.file("big.bin"));
  EXPECT_EQ(shard.token(1), 0x80000000u);
  std::vector<std::int32_t> out(2);
  expect_error<DataError>([&] { shard.read(0, 2, out.data()); },
                          {"2147483648", "index 1", "byte 1028", "int32"});
}

// ---- corrupt and foreign files ---------------------------------------------

class CorruptShard : public ::testing::Test {
 protected:
  void SetUp() override {
    good_ = llmc_bytes<std::uint16_t>(20240520, 1, {10, 20, 30, 40});
  }
  std::string write(const std::vector<unsigned char>& bytes) {
    const std::string path = dir_.file("bad.bin");
    write_bytes(path, bytes);
    return path;
  }
  void set_int(std::size_t index, std::int32_t value) {
    std::memcpy(good_.data() + 4 * index, &value, 4);
  }
  ScratchDir dir_;
  std::vector<unsigned char> good_;
};

TEST_F(CorruptShard, MissingFile) {
  expect_error<DataError>([&] { ShardReader(dir_.file("nope.bin")); }, {"cannot open", "nope.bin"});
}

TEST_F(CorruptShard, EmptyFile) {
  const std::string path = write({});
  expect_error<DataError>([&] { ShardReader{path}; }, {"bad.bin", "has 0 bytes", "needs 1024"});
}

TEST_F(CorruptShard, TruncatedHeader) {
  good_.resize(100);
  const std::string path = write(good_);
  expect_error<DataError>([&] { ShardReader{path}; }, {"truncated", "has 100 bytes"});
}

TEST_F(CorruptShard, ForeignFile) {
  std::vector<unsigned char> text(2000, 'x');
  const std::string path = write(text);
  expect_error<DataError>([&] { ShardReader{path}; },
                          {"not an llm.c token shard", "magic", "2021161080", "20240520", "20240801"});
}

TEST_F(CorruptShard, WrongVersionForMagic) {
  set_int(1, 7);  // llama-3's version with gpt-2's magic
  const std::string path = write(good_);
  expect_error<DataError>([&] { ShardReader{path}; }, {"magic 20240520", "version 7", "expected 1"});
}

TEST_F(CorruptShard, NegativeCount) {
  set_int(2, -4);
  const std::string path = write(good_);
  expect_error<DataError>([&] { ShardReader{path}; }, {"negative token count -4"});
}

TEST_F(CorruptShard, TruncatedTokens) {
  good_.pop_back();  // half a token missing
  const std::string path = write(good_);
  expect_error<DataError>([&] { ShardReader{path}; },
                          {"should be 1032 bytes", "4 uint16 tokens", "is 1031 bytes", "(truncated)"});
}

TEST_F(CorruptShard, CountLargerThanData) {
  set_int(2, 1000);
  const std::string path = write(good_);
  expect_error<DataError>([&] { ShardReader{path}; }, {"should be 3024 bytes", "is 1032", "truncated"});
}

TEST_F(CorruptShard, TrailingBytes) {
  good_.push_back(0);
  good_.push_back(0);
  const std::string path = write(good_);
  expect_error<DataError>([&] { ShardReader{path}; }, {"is 1034 bytes", "trailing"});
}

TEST_F(CorruptShard, Uint32CountedAsUint16) {
  // A llama-3 shard whose magic was rewritten to gpt-2's: sizes disagree.
  std::vector<unsigned char> bytes = llmc_bytes<std::uint32_t>(20240801, 7, {1, 2, 3});
  const std::int32_t magic = 20240520, version = 1;
  std::memcpy(bytes.data(), &magic, 4);
  std::memcpy(bytes.data() + 4, &version, 4);
  const std::string path = write(bytes);
  expect_error<DataError>([&] { ShardReader{path}; }, {"should be 1030 bytes", "is 1036"});
}

// ---- writer ------------------------------------------------------------------

TEST(ShardWriter, RejectsTokensThatDoNotFitAndWritesNothing) {
  ScratchDir dir;
  const std::string path = dir.file("s.bin");
  {
    ShardWriter out(path, TokenFormat::kUint16);
    out.append({1, 2});
    expect_error<DataError>([&] { out.append({3, 65536}); },
                            {"token 65536", "index 3", "uint16", "0..65535"});
    expect_error<DataError>([&] { out.append({-1}); }, {"token -1", "index 2"});
    EXPECT_EQ(out.token_count(), 2);  // the rejected chunks left no trace
    out.commit();
  }
  ShardReader shard(path);
  EXPECT_EQ(read_all(shard), (std::vector<std::int32_t>{1, 2}));
}

TEST(ShardWriter, UncommittedWriterLeavesNoFile) {
  ScratchDir dir;
  {
    ShardWriter out(dir.file("s.bin"), TokenFormat::kUint32);
    out.append({1, 2, 3});
    EXPECT_EQ(dir.entries().size(), 1u);  // the temporary file
  }
  EXPECT_TRUE(dir.entries().empty());
}

TEST(ShardWriter, ReplacesAnExistingShardOnlyAtCommit) {
  ScratchDir dir;
  const std::string path = dir.file("s.bin");
  write_shard(path, TokenFormat::kUint16, {1, 2, 3});
  ShardWriter out(path, TokenFormat::kUint16);
  out.append({9, 9, 9, 9, 9});
  EXPECT_EQ(read_all(ShardReader(path)), (std::vector<std::int32_t>{1, 2, 3}));
  out.commit();
  EXPECT_EQ(read_all(ShardReader(path)), (std::vector<std::int32_t>{9, 9, 9, 9, 9}));
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"s.bin"});
}

TEST(ShardWriter, CommittedShardIsReadableByEveryone) {
  ScratchDir dir;
  write_shard(dir.file("s.bin"), TokenFormat::kUint16, {1});
  EXPECT_EQ(std::filesystem::status(dir.file("s.bin")).permissions(),
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
                std::filesystem::perms::group_read | std::filesystem::perms::others_read);
}

TEST(ShardWriter, MissingDirectoryIsAClearError) {
  ScratchDir dir;
  expect_error<DataError>([&] { ShardWriter(dir.file("no/such/dir/s.bin"), TokenFormat::kUint16); },
                          {"cannot create a temporary file", "no/such/dir/s.bin"});
}

}  // namespace
}  // namespace flashtrain::data

#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "flashtrain/trainer/checkpoint/safetensors.h"

namespace flashtrain::trainer {
namespace {

std::string encode(const std::vector<TensorBytes>& tensors, const std::map<std::string, std::string>& metadata = {}) {
  std::string out;
  write_safetensors(tensors, metadata, [&](const void* data, std::size_t n) {
    out.append(static_cast<const char*>(data), n);
  });
  return out;
}

std::uint64_t header_length(const std::string& file) {
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= std::uint64_t(static_cast<unsigned char>(file[i])) << (8 * i);
  return n;
}

// Builds a file by hand from a header text and data bytes.
std::string handmade(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = char((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

TEST(Safetensors, LayoutFollowsTheFormat) {
  const float weights[3] = {1.0f, -2.0f, 0.5f};
  const std::int64_t steps[1] = {7};
  const std::uint16_t half[2] = {0x3f80, 0x4000};
  const std::string file = encode({{"w", "F32", {3}, weights, sizeof weights},
                                   {"a.step", "I64", {}, steps, sizeof steps},
                                   {"h", "BF16", {2}, half, sizeof half}});
  const std::uint64_t n = header_length(file);
  EXPECT_EQ((8 + n) % 8, 0u) << "the data must start 8-byte aligned";
  const nlohmann::json header = nlohmann::json::parse(file.substr(8, n));
  EXPECT_EQ(header["__metadata__"], nlohmann::json({{"format", "pt"}}));
  // Largest elements first, so each tensor is aligned to its element size, no gaps.
  EXPECT_EQ(header["a.step"]["data_offsets"], nlohmann::json({0, 8}));
  EXPECT_EQ(header["w"]["data_offsets"], nlohmann::json({8, 20}));
  EXPECT_EQ(header["h"]["data_offsets"], nlohmann::json({20, 24}));
  EXPECT_EQ(header["w"]["shape"], nlohmann::json({3}));
  EXPECT_EQ(header["a.step"]["shape"], nlohmann::json::array());
  EXPECT_EQ(file.size(), 8 + n + 24);
  float stored[3];
  std::memcpy(stored, file.data() + 8 + n + 8, sizeof stored);
  EXPECT_EQ(stored[1], -2.0f);
}

TEST(Safetensors, RoundTripsNamesShapesValuesAndMetadata) {
  std::vector<double> big(1000);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = 0.25 * double(i);
  const std::uint8_t flags[5] = {1, 0, 1, 1, 0};
  const std::string file = encode({{"blocks.0.mixer.r", "F64", {10, 100}, big.data(), big.size() * 8},
                                   {"mask", "U8", {5}, flags, 5},
                                   {"empty", "F32", {0, 4}, nullptr, 0}},
                                  {{"note", "hello"}});
  const SafetensorsFile read = SafetensorsFile::parse(file, "test");
  EXPECT_EQ(read.metadata().at("format"), "pt");
  EXPECT_EQ(read.metadata().at("note"), "hello");
  ASSERT_EQ(read.tensors().size(), 3u);
  const auto& r = read.at("blocks.0.mixer.r");
  EXPECT_EQ(r.dtype, "F64");
  EXPECT_EQ(r.shape, (std::vector<std::int64_t>{10, 100}));
  ASSERT_EQ(r.bytes, 8000u);
  EXPECT_EQ(std::memcmp(r.data, big.data(), 8000), 0);
  EXPECT_EQ(std::memcmp(read.at("mask").data, flags, 5), 0);
  EXPECT_EQ(read.at("empty").bytes, 0u);
  EXPECT_THROW(read.at("missing"), std::runtime_error);
}

TEST(Safetensors, WriterRejectsBadTensors) {
  const float x[2] = {0, 0};
  EXPECT_THROW(encode({{"x", "F32", {3}, x, 8}}), std::invalid_argument);          // size vs shape
  EXPECT_THROW(encode({{"x", "F99", {2}, x, 8}}), std::invalid_argument);          // dtype
  EXPECT_THROW(encode({{"x", "F32", {2}, x, 8}, {"x", "F32", {2}, x, 8}}), std::invalid_argument);  // duplicate
  EXPECT_THROW(encode({{"", "F32", {2}, x, 8}}), std::invalid_argument);
  EXPECT_THROW(encode({{"__metadata__", "F32", {2}, x, 8}}), std::invalid_argument);
}

void expect_rejected(const std::string& file, const std::string& words) {
  try {
    SafetensorsFile::parse(file, "bad.safetensors");
    ADD_FAILURE() << "accepted a file that should fail with: " << words;
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.safetensors"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(Safetensors, ReaderRejectsMalformedFiles) {
  expect_rejected("abc", "shorter than");
  expect_rejected(std::string("\xff\xff\xff\xff\0\0\0\0", 8) + "{}", "header length");
  expect_rejected(handmade("{not json", ""), "not JSON");
  expect_rejected(handmade("[1, 2]", ""), "not a JSON object");
  expect_rejected(handmade(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", "1234"), "past the data");
  expect_rejected(handmade(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", "12345678"), "need 12");
  expect_rejected(handmade(R"({"x":{"dtype":"Q7","shape":[2],"data_offsets":[0,8]}})", "12345678"), "dtype");
  expect_rejected(handmade(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", "12345678"),
                  "back to back");
  expect_rejected(handmade(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", "12345678"), "cover 4");
  expect_rejected(handmade(R"({"x":{"dtype":"F32","data_offsets":[0,4]}})", "1234"), "x:");
  expect_rejected(handmade(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", "1234"), "begin <= end");
}

TEST(Safetensors, ReaderAcceptsOverlapFreeFilesFromOtherWriters) {
  // Tensors listed out of offset order, header padded with spaces.
  const std::string data = "AAAABBBBBBBB";
  const SafetensorsFile f = SafetensorsFile::parse(
      handmade(R"({"b":{"dtype":"I64","shape":[1],"data_offsets":[4,12]},"a":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}}   )",
               data),
      "other");
  EXPECT_EQ(std::string(f.at("a").data, 4), "AAAA");
  EXPECT_EQ(std::string(f.at("b").data, 8), "BBBBBBBB");
  EXPECT_TRUE(f.metadata().empty());
}

}  // namespace
}  // namespace flashtrain::trainer

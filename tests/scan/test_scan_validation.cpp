// Malformed input: InputError naming the tensor, its shape and the expected one.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include "flashrnn/scan.h"

namespace flashrnn {
namespace {

// Runs scan and returns the InputError's message ("" if none was thrown).
std::string error_of(const torch::Tensor& a, const torch::Tensor& b, const ScanOptions& o = {}) {
  try {
    scan(a, b, o);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

void expect_message(const std::string& message, std::initializer_list<const char*> parts) {
  EXPECT_FALSE(message.empty()) << "no InputError was thrown";
  for (const char* part : parts) EXPECT_NE(message.find(part), std::string::npos)
      << "'" << part << "' missing from: " << message;
}

TEST(ScanValidation, RankAndShapes) {
  const torch::Tensor a = torch::rand({2, 3, 5}), b = torch::rand({2, 3, 5});
  expect_message(error_of(torch::rand({2, 3}), torch::rand({2, 3})),
                 {"a must have 3 dimensions", "[B, D, T]", "[2, 3]"});
  expect_message(error_of(a, torch::rand({2, 3, 4})), {"b has shape [2, 3, 4]", "[2, 3, 5]"});
  expect_message(error_of(torch::rand({2, 3, 0}), torch::rand({2, 3, 0})),
                 {"[2, 3, 0]", "at least 1"});
  ScanOptions o;
  o.x0 = torch::rand({2, 5});
  expect_message(error_of(a, b, o), {"x0 has shape [2, 5]", "[B, D] = [2, 3]"});
  o.layout = ScanLayout::kBTD;  // [B, T, D]: D is 5 now, so this x0 fits
  EXPECT_EQ(error_of(a, b, o), "");
  o.x0 = torch::rand({2, 3});
  expect_message(error_of(a, b, o), {"x0 has shape [2, 3]", "[B, D] = [2, 5]", "[B, T, D]"});
  o.x0 = torch::Tensor();
  expect_message(error_of(a, b, o), {"x0 is an undefined tensor"});
  expect_message(error_of(torch::Tensor(), b), {"a is an undefined tensor"});
}

TEST(ScanValidation, DtypesAndDevices) {
  const torch::Tensor a = torch::rand({2, 3, 5}), b = torch::rand({2, 3, 5});
  expect_message(error_of(a, b.to(torch::kDouble)), {"b has dtype Double", "a has dtype Float"});
  expect_message(error_of(a.to(torch::kInt), b.to(torch::kInt)), {"a has dtype Int", "float32"});
  ScanOptions o;
  o.x0 = torch::rand({2, 3}, torch::kHalf);
  expect_message(error_of(a, b, o), {"x0 has dtype Half"});
  o = ScanOptions();
  o.backend = ScanBackend::kCuda;
  expect_message(error_of(a, b, o), {"backend=cuda needs CUDA tensors", "cpu"});
}

TEST(ScanValidation, NamesRoundTrip) {
  for (ScanLayout l : {ScanLayout::kBDT, ScanLayout::kBTD})
    EXPECT_EQ(parse_scan_layout(to_string(l)), l);
  for (ScanBackend b : {ScanBackend::kVanilla, ScanBackend::kCuda, ScanBackend::kAuto})
    EXPECT_EQ(parse_scan_backend(to_string(b)), b);
  EXPECT_THROW(parse_scan_layout("tbd"), InputError);
  try {
    parse_scan_backend("fused");
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("vanilla, cuda, auto"), std::string::npos);
  }
}

}  // namespace
}  // namespace flashrnn

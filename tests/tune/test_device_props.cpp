// Device fixtures and the live query.
#include <gtest/gtest.h>

#include "flashrnn/tune/device_props.h"
#include "flashrnn/tune/device_query.h"
#include "flashrnn/tune/errors.h"

namespace flashrnn::tune {
namespace {

TEST(DeviceProps, FixturesAreValidAndConsistentWithTheirArchitecture) {
  ASSERT_EQ(device_fixture_names(), (std::vector<std::string>{"a100", "h100", "h200", "l4"}));
  for (const std::string& name : device_fixture_names()) {
    SCOPED_TRACE(name);
    const DeviceProps d = device_fixture(name);
    EXPECT_NO_THROW(validate(d));
    // Relations that hold on every architecture since sm_80 and catch typos:
    // 64 Ki registers per SM and per block, 255 per thread, 1 KiB of shared
    // memory per SM reserved for the system, clusters only from sm_90 on.
    EXPECT_EQ(d.regs_per_sm, 65536);
    EXPECT_EQ(d.regs_per_block, 65536);
    EXPECT_EQ(d.regs_per_thread, 255);
    EXPECT_EQ(d.smem_per_sm - d.smem_per_block_optin, 1024);
    EXPECT_EQ(d.smem_per_block, 48 * 1024);
    EXPECT_EQ(d.has_clusters(), d.compute_major >= 9);
  }
  EXPECT_EQ(device_fixture("A100").sm_count, 108);
  EXPECT_EQ(device_fixture("H100").sm_count, 132);
  EXPECT_EQ(device_fixture("h200").sm_count, 132);  // the H200 SXM has 132 SMs, as the H100 SXM
  EXPECT_EQ(device_fixture("l4").sm_count, 58);
}

TEST(DeviceProps, UnknownFixtureListsTheKnownOnes) {
  try {
    device_fixture("v100");
    FAIL();
  } catch (const ProblemError& e) {
    EXPECT_NE(std::string(e.what()).find("'v100'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("a100, h100, h200, l4"), std::string::npos) << e.what();
  }
}

TEST(DeviceProps, ValidateNamesTheBadField) {
  DeviceProps d = device_fixture("h100");
  d.sm_count = 0;
  try {
    validate(d);
    FAIL();
  } catch (const ProblemError& e) {
    EXPECT_NE(std::string(e.what()).find("sm_count = 0"), std::string::npos) << e.what();
  }
  d = device_fixture("h100");
  d.smem_per_block_optin = d.smem_per_sm + 1;
  EXPECT_THROW(validate(d), ProblemError);
}

// Fixture names give the fixture; "cuda[:N]" reads a live device (or fails
// saying why, where there is none); anything else names the problem.
TEST(DeviceQuery, DeviceByName) {
  EXPECT_EQ(device_by_name("h200").name, device_fixture("h200").name);
  EXPECT_THROW(device_by_name("v100"), ProblemError);
  for (const char* bad : {"cuda:", "cuda:x", "cuda:-1", "cuda:1x"}) {
    try {
      device_by_name(bad);
      ADD_FAILURE() << bad;
    } catch (const ProblemError& e) {
      EXPECT_NE(std::string(e.what()).find("the ordinal after 'cuda:'"), std::string::npos) << e.what();
    }
  }
  try {
    const DeviceProps live = device_by_name("cuda:0");
    EXPECT_NO_THROW(validate(live));
  } catch (const DeviceQueryError& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA"), std::string::npos) << e.what();
  }
}

// Without a GPU (CI) the query must fail with a message naming the CUDA error;
// with one, it must return sane properties, equal to the fixture of that board.
TEST(DeviceQuery, ReadsALiveDeviceOrSaysWhyNot) {
  DeviceProps live;
  try {
    live = query_cuda_device(0);
  } catch (const DeviceQueryError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("CUDA"), std::string::npos) << message;
    EXPECT_NE(message.find("cudaError"), std::string::npos) << message;
    GTEST_SKIP() << "no CUDA device here: " << message;
  }
  EXPECT_NO_THROW(validate(live));
  std::printf("%s", describe(live).c_str());
  EXPECT_THROW(query_cuda_device(1 << 20), DeviceQueryError);
  for (const std::string& name : device_fixture_names()) {
    const DeviceProps fixture = device_fixture(name);
    if (fixture.name != live.name) continue;
    EXPECT_EQ(live.compute_major, fixture.compute_major);
    EXPECT_EQ(live.compute_minor, fixture.compute_minor);
    EXPECT_EQ(live.sm_count, fixture.sm_count);
    EXPECT_EQ(live.regs_per_sm, fixture.regs_per_sm);
    EXPECT_EQ(live.regs_per_block, fixture.regs_per_block);
    EXPECT_EQ(live.smem_per_sm, fixture.smem_per_sm);
    EXPECT_EQ(live.smem_per_block, fixture.smem_per_block);
    EXPECT_EQ(live.smem_per_block_optin, fixture.smem_per_block_optin);
    EXPECT_EQ(live.max_threads_per_block, fixture.max_threads_per_block);
    EXPECT_EQ(live.max_threads_per_sm, fixture.max_threads_per_sm);
    EXPECT_EQ(live.max_cluster_size, fixture.max_cluster_size);
    EXPECT_EQ(live.l2_bytes, fixture.l2_bytes);
  }
}

}  // namespace
}  // namespace flashrnn::tune

// The step profile (step_profiler.h): categories by name, the summary's
// arithmetic on made-up events, and a CPU run that writes a trace a
// Chrome / Perfetto viewer reads and prints its summary.
#include <gtest/gtest.h>

#include <sstream>

#include <nlohmann/json.hpp>

#include "flashtrain/trainer/step/step_profiler.h"
#include "flashtrain/trainer/run/trainer.h"
#include "tiny_run.h"

namespace flashtrain::trainer {
namespace {

namespace fs = std::filesystem;

TEST(StepProfiler, CategoriesFollowTheNames) {
  EXPECT_EQ(profile_category("void flashrnn::fused::tc_forward_kernel<...>"), "recurrent op");
  EXPECT_EQ(profile_category("void flashrnn::scan::warp_scan<float>"), "scan op");
  EXPECT_EQ(profile_category("sm90_xmma_gemm_bf16bf16_bf16f32"), "GEMM");
  EXPECT_EQ(profile_category("aten::addmm"), "GEMM");
  EXPECT_EQ(profile_category("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"), "GEMM");
  EXPECT_EQ(profile_category("void flashrnn::layers::headwise_norm_forward_kernel<__nv_bfloat16>"), "norm");
  EXPECT_EQ(profile_category("void flashrnn::layers::causal_conv_silu_backward_kernel<float>"), "convolution");
  EXPECT_EQ(profile_category("void flashrnn::layers::(anonymous namespace)::silu_mul_backward_kernel<__nv_bfloat16>"), "elementwise");
  EXPECT_EQ(profile_category("void at::native::conv_depthwise2d_forward_kernel_generic<float>"), "convolution");
  EXPECT_EQ(profile_category("pytorch_flash::flash_fwd_kernel"), "attention");
  EXPECT_EQ(profile_category("void at::native::(anonymous)::multi_tensor_apply_kernel<FusedAdamMathFunctor>"),
            "optimizer");
  EXPECT_EQ(profile_category("void at::native::vectorized_layer_norm_kernel<float>"), "norm");
  EXPECT_EQ(profile_category("Memcpy HtoD (Pageable -> Device)"), "copy");
  EXPECT_EQ(profile_category("void at::native::vectorized_elementwise_kernel<4, ...>"), "elementwise");
  EXPECT_EQ(profile_category("cudaLaunchKernel"), "other");
}

TEST(StepProfiler, NestedEventsCountOnceAndIdleIsTheRest) {
  // Lane 0: an outer GEMM op 0-40 ns holding a nested copy; lane 1: a norm
  // 30-50 ns overlapping it; then nothing until the wall's end at 100 ns.
  const std::vector<ProfileEvent> events = {
      {"aten::linear", 0, 40, 0}, {"aten::copy_", 10, 20, 0}, {"aten::layer_norm", 30, 50, 1}};
  const ProfileSummary s = summarize_profile(events, 100e-9);
  EXPECT_NEAR(s.busy_seconds, 50e-9, 1e-15);  // 0-50 covered
  ASSERT_EQ(s.categories.size(), 2u);
  EXPECT_EQ(std::get<0>(s.categories[0]), "GEMM");
  EXPECT_NEAR(std::get<1>(s.categories[0]), 40e-9, 1e-15);
  EXPECT_EQ(std::get<0>(s.categories[1]), "norm");
  const std::string text = format_profile_summary(s, "profile:");
  EXPECT_NE(text.find("GEMM"), std::string::npos) << text;
  EXPECT_NE(text.find("idle"), std::string::npos) << text;
  EXPECT_NE(text.find(" 50.0 %"), std::string::npos) << text;  // idle: 50 of 100 ns
}

TEST(StepProfiler, ARunWritesATraceAndPrintsWhereTheTimeWent) {
  testing::TinyRun run;
  std::ostringstream log;
  Trainer trainer(run.config({"--training.steps=8", "--training.profile_steps=2"}), log);
  trainer.run();
  const fs::path trace = run.dir() / "out" / "profile" / "steps_4-5.json";
  ASSERT_TRUE(fs::exists(trace)) << log.str();
  const nlohmann::json json = nlohmann::json::parse(testing::read_file(trace));
  ASSERT_TRUE(json.contains("traceEvents"));
  EXPECT_GT(json["traceEvents"].size(), 10u);
  EXPECT_NE(log.str().find("profile of steps 4-5 (outermost CPU operators; trace: " + trace.string()),
            std::string::npos)
      << log.str();
  EXPECT_NE(log.str().find("idle"), std::string::npos) << log.str();
  EXPECT_FALSE(fs::exists(run.dir() / "out" / "profile" / "steps_4-5.json.tmp"));
}

}  // namespace
}  // namespace flashtrain::trainer

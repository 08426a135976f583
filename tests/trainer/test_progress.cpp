// The progress line, the metrics log, the peak FLOP table and the NaN/Inf guard.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "flashtrain/trainer/run/metrics_log.h"
#include "flashtrain/trainer/step/nonfinite_guard.h"
#include "flashtrain/trainer/run/peak_flops.h"
#include "flashtrain/trainer/run/progress.h"
#include "scratch_dir.h"

namespace flashtrain::trainer {
namespace {

TEST(Progress, DurationsAndRates) {
  EXPECT_EQ(format_duration(0), "0s");
  EXPECT_EQ(format_duration(59.4), "59s");
  EXPECT_EQ(format_duration(185), "3m05s");
  EXPECT_EQ(format_duration(7380), "2h03m");
  EXPECT_EQ(format_duration(3 * 86400 + 4 * 3600), "3d04h");
  EXPECT_EQ(format_duration(-1), "?");
  EXPECT_EQ(format_duration(std::nan("")), "?");
  EXPECT_EQ(format_rate(950), "950");
  EXPECT_EQ(format_rate(11234), "11.2k");
  EXPECT_EQ(format_rate(3.4e6), "3.40M");
}

TEST(Progress, LineHasEveryField) {
  ProgressLine p;
  p.step = 50;
  p.total_steps = 200;
  p.loss = 5.43125;
  p.lr = 3e-3;
  p.grad_norm = 0.8421;
  p.tokens_per_second = 11234;
  p.eta_seconds = 65;
  EXPECT_EQ(format_progress_line(p),
            "step  50/200 | loss 5.4313 | lr 3.00e-03 | grad 0.842 | 11.2k tok/s | ETA 1m05s");
  p.mfu = 0.314;
  p.memory_gib = 12.34;
  p.skipped_steps = 2;
  EXPECT_EQ(format_progress_line(p),
            "step  50/200 | loss 5.4313 | lr 3.00e-03 | grad 0.842 | 11.2k tok/s | ETA 1m05s | MFU 31.4% | "
            "mem 12.3 GiB | skipped 2");
}

TEST(MetricsLog, AppendsOneJsonObjectPerLine) {
  testing::ScratchDir dir;
  const std::string path = (dir / "run" / "metrics.jsonl").string();
  {
    MetricsLog log(path);
    EXPECT_TRUE(log.enabled());
    log.write({{"kind", "train"}, {"step", 1}, {"loss", 2.5}});
  }
  MetricsLog again(path);  // a resumed run appends
  again.write({{"kind", "val"}, {"step", 2}, {"loss", std::numeric_limits<double>::quiet_NaN()}});
  EXPECT_EQ(testing::read_file(path),
            "{\"kind\":\"train\",\"loss\":2.5,\"step\":1}\n{\"kind\":\"val\",\"loss\":null,\"step\":2}\n");
  MetricsLog none("");
  EXPECT_FALSE(none.enabled());
  none.write({{"ignored", true}});
}

TEST(PeakFlops, KnownGpusOnly) {
  EXPECT_DOUBLE_EQ(*peak_flops_per_second("NVIDIA H100 80GB HBM3", true), 989.4e12);
  EXPECT_DOUBLE_EQ(*peak_flops_per_second("NVIDIA H100 PCIe", true), 756.0e12);
  EXPECT_DOUBLE_EQ(*peak_flops_per_second("NVIDIA H200", false), 66.9e12);
  EXPECT_DOUBLE_EQ(*peak_flops_per_second("NVIDIA A100-SXM4-80GB", true), 312.0e12);
  EXPECT_DOUBLE_EQ(*peak_flops_per_second("NVIDIA L4", true), 121.0e12);
  EXPECT_DOUBLE_EQ(*peak_flops_per_second("NVIDIA L40S", true), 362.1e12);
  EXPECT_FALSE(peak_flops_per_second("Intel Xeon", true));
}

TEST(NonfiniteGuard, SkipsCountsAndGivesUpAfterKInARow) {
  NonfiniteGuard guard(3);
  EXPECT_TRUE(guard.record(true));
  EXPECT_FALSE(guard.record(false));
  EXPECT_FALSE(guard.record(false));
  EXPECT_FALSE(guard.exhausted());
  EXPECT_TRUE(guard.record(true));  // a finite step resets the run
  EXPECT_EQ(guard.in_row(), 0);
  EXPECT_EQ(guard.total(), 2);
  for (int i = 0; i < 3; ++i) guard.record(false);
  EXPECT_TRUE(guard.exhausted());
  EXPECT_EQ(guard.total(), 5);
  guard.restore(1, 7);
  EXPECT_FALSE(guard.exhausted());
  EXPECT_EQ(guard.total(), 7);
  EXPECT_THROW(NonfiniteGuard(0), std::invalid_argument);
}

}  // namespace
}  // namespace flashtrain::trainer

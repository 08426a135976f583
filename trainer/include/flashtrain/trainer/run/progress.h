// The progress line the train loop prints every metrics.log_every steps:
//   step   50/200 | loss 5.4312 | lr 3.00e-03 | grad 0.842 | 11.2k tok/s | ETA 1m05s
// with "| MFU 31.4%" where the peak FLOP rate of the device is known,
// "| mem 12.3 GiB" (peak GPU memory allocated since the previous line) on GPUs, and "| skipped 2" when
// non-finite steps were skipped.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace flashtrain::trainer {

struct ProgressLine {
  std::int64_t step = 0;
  std::int64_t total_steps = 0;
  double loss = 0.0;
  double lr = 0.0;
  double grad_norm = 0.0;
  double tokens_per_second = 0.0;
  double eta_seconds = 0.0;
  std::optional<double> mfu;  // fraction of the peak, 0..1
  std::optional<double> memory_gib;
  std::int64_t skipped_steps = 0;
};

std::string format_progress_line(const ProgressLine& line);

// "45s", "3m05s", "2h03m", "3d04h"; "?" for a negative or non-finite time.
std::string format_duration(double seconds);
// 950 -> "950", 11234 -> "11.2k", 3.4e6 -> "3.40M".
std::string format_rate(double per_second);

}  // namespace flashtrain::trainer

// training.profile_steps = N (--profile[=N]): N training steps run under
// libtorch's Kineto profiler, starting after the run's first three steps
// (warm-up and, on a GPU, the CUDA-graph capture). Then a Chrome / Perfetto
// trace goes to <dump_folder>/profile/steps_<first>-<last>.json and a summary
// is printed: where the time went by category (the recurrent op, GEMMs,
// attention, ...) and how much of the steps' wall time the device was idle.
// On a GPU the summary counts kernels and copies; on the CPU, the outermost
// operators of each thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace flashtrain::trainer {

// One timed event of a trace: a kernel or copy on a device lane (stream), or
// an operator on a CPU thread.
struct ProfileEvent {
  std::string name;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  std::int64_t lane = 0;  // stream or thread
};

struct ProfileSummary {
  double wall_seconds = 0.0;  // the profiled steps, start to end
  double busy_seconds = 0.0;  // time covered by at least one outermost event
  // (category, seconds, events), largest first; an event nested inside
  // another of its lane counts only through the outer one.
  std::vector<std::tuple<std::string, double, std::int64_t>> categories;
};

// The category of a kernel or operator name: "recurrent op", "scan op",
// "GEMM", "attention", "norm", "optimizer", "copy", "elementwise" or "other".
std::string profile_category(std::string_view name);

ProfileSummary summarize_profile(const std::vector<ProfileEvent>& events, double wall_seconds);

// The printed table: one line per category with its share of the wall time,
// then "idle".
std::string format_profile_summary(const ProfileSummary& summary, std::string_view what);

class StepProfiler {
 public:
  // Profiles steps first_step .. first_step + steps - 1 (nothing when steps
  // is 0); `cuda`: the run is on a GPU (kernels are traced and summarized).
  StepProfiler(std::int64_t first_step, std::int64_t steps, std::filesystem::path folder, bool cuda);
  ~StepProfiler();
  StepProfiler(const StepProfiler&) = delete;
  StepProfiler& operator=(const StepProfiler&) = delete;

  // Call before and after each training step. After the last profiled step,
  // after_step stops the profiler, writes the trace and returns the summary.
  void before_step(std::int64_t step);
  std::optional<std::string> after_step(std::int64_t step);

  std::int64_t first_step() const { return first_; }
  std::int64_t last_step() const { return first_ + steps_ - 1; }

 private:
  std::int64_t first_;
  std::int64_t steps_;
  std::filesystem::path folder_;
  bool cuda_;
  bool active_ = false;
  std::uint64_t started_ns_ = 0;
};

}  // namespace flashtrain::trainer

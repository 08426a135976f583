#include "flashtrain/trainer/step/step_profiler.h"

#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

namespace flashtrain::trainer {
namespace fs = std::filesystem;
namespace profiler = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;
using torch::profiler::impl::ProfilerConfig;
using torch::profiler::impl::ProfilerState;

namespace {

std::uint64_t now_ns() {
  return std::uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now().time_since_epoch())
                           .count());
}

bool contains_any(const std::string& text, std::initializer_list<const char*> words) {
  for (const char* word : words)
    if (text.find(word) != std::string::npos) return true;
  return false;
}

}  // namespace

std::string profile_category(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
  // Our kernels live in namespace flashrnn (the scan op in flashrnn::scan,
  // the block layers in flashrnn::layers: norms, the convolution and the
  // SwiGLU product, an elementwise kernel).
  if (contains_any(lower, {"flashrnn::scan", "scan_"})) return "scan op";
  if (contains_any(lower, {"causal_conv", "conv_depthwise", "convolution"})) return "convolution";
  if (contains_any(lower, {"flashrnn::layers"}) && contains_any(lower, {"norm"})) return "norm";
  if (contains_any(lower, {"flashrnn::layers"}) && contains_any(lower, {"silu_mul"})) return "elementwise";
  if (contains_any(lower, {"flashrnn"})) return "recurrent op";
  if (contains_any(lower, {"flash_fwd", "flash_bwd", "fmha", "attention", "sdpa"})) return "attention";
  // cuBLAS's Hopper GEMMs are named nvjet_*.
  if (contains_any(lower, {"gemm", "xmma", "cutlass", "cublas", "nvjet", "aten::mm", "aten::addmm", "aten::bmm",
                           "aten::linear", "aten::matmul"}))
    return "GEMM";
  if (contains_any(lower, {"adam", "multi_tensor", "foreach"})) return "optimizer";
  if (contains_any(lower, {"norm"})) return "norm";
  if (contains_any(lower, {"memcpy", "memset", "copy"})) return "copy";
  if (contains_any(lower, {"elementwise", "vectorized", "unrolled", "reduce", "softmax", "aten::"}))
    return "elementwise";
  return "other";
}

ProfileSummary summarize_profile(const std::vector<ProfileEvent>& events, double wall_seconds) {
  ProfileSummary summary;
  summary.wall_seconds = wall_seconds;
  // Outermost events of each lane: sorted by start (longer first on ties),
  // an event ending within the current outer one is nested in it.
  std::map<std::int64_t, std::vector<const ProfileEvent*>> lanes;
  for (const ProfileEvent& e : events)
    if (e.end_ns > e.start_ns) lanes[e.lane].push_back(&e);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> outer_intervals;
  std::map<std::string, std::pair<double, std::int64_t>> by_category;
  for (auto& [lane, list] : lanes) {
    std::sort(list.begin(), list.end(), [](const ProfileEvent* a, const ProfileEvent* b) {
      return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->end_ns > b->end_ns;
    });
    std::uint64_t outer_end = 0;
    for (const ProfileEvent* e : list) {
      if (e->end_ns <= outer_end) continue;  // nested
      outer_end = e->end_ns;
      outer_intervals.emplace_back(e->start_ns, e->end_ns);
      auto& [seconds, count] = by_category[profile_category(e->name)];
      seconds += double(e->end_ns - e->start_ns) * 1e-9;
      ++count;
    }
  }
  // Busy: the union of the outermost intervals over all lanes.
  std::sort(outer_intervals.begin(), outer_intervals.end());
  std::uint64_t covered_to = 0, busy_ns = 0;
  for (const auto& [start, end] : outer_intervals) {
    const std::uint64_t from = std::max(start, covered_to);
    if (end > from) busy_ns += end - from;
    covered_to = std::max(covered_to, end);
  }
  summary.busy_seconds = double(busy_ns) * 1e-9;
  for (const auto& [name, totals] : by_category) summary.categories.emplace_back(name, totals.first, totals.second);
  std::sort(summary.categories.begin(), summary.categories.end(),
            [](const auto& a, const auto& b) { return std::get<1>(a) > std::get<1>(b); });
  return summary;
}

std::string format_profile_summary(const ProfileSummary& summary, std::string_view what) {
  std::string text = std::string(what) + "\n";
  char line[160];
  const double wall = std::max(summary.wall_seconds, 1e-12);
  for (const auto& [name, seconds, count] : summary.categories) {
    std::snprintf(line, sizeof line, "  %-14s %10.3f ms %6.1f %%  (%lld events)\n", name.c_str(), seconds * 1e3,
                  100.0 * seconds / wall, static_cast<long long>(count));
    text += line;
  }
  const double idle = std::max(0.0, summary.wall_seconds - summary.busy_seconds);
  std::snprintf(line, sizeof line, "  %-14s %10.3f ms %6.1f %%  (no event running)\n", "idle", idle * 1e3,
                100.0 * idle / wall);
  return text + line;
}

StepProfiler::StepProfiler(std::int64_t first_step, std::int64_t steps, fs::path folder, bool cuda)
    : first_(first_step), steps_(steps), folder_(std::move(folder)), cuda_(cuda) {
  if (steps_ <= 0) return;
  // Kineto logs at errors level "gpuGetDeviceCount failed" on a machine
  // without a GPU; its warnings and errors stay quiet unless asked for.
  if (!cuda_) ::setenv("KINETO_LOG_LEVEL", "5", /*overwrite=*/0);
  std::set<ActivityType> activities{ActivityType::CPU};
  if (cuda_) activities.insert(ActivityType::CUDA);
  profiler::prepareProfiler(ProfilerConfig(ProfilerState::KINETO), activities);
}

StepProfiler::~StepProfiler() {
  if (active_) profiler::disableProfiler();  // a run stopped mid-profile
}

void StepProfiler::before_step(std::int64_t step) {
  if (steps_ <= 0 || step != first_) return;
  std::set<ActivityType> activities{ActivityType::CPU};
  if (cuda_) {
    activities.insert(ActivityType::CUDA);
    torch::cuda::synchronize();  // earlier steps' work stays out
  }
  profiler::enableProfiler(ProfilerConfig(ProfilerState::KINETO), activities);
  active_ = true;
  started_ns_ = now_ns();
}

std::optional<std::string> StepProfiler::after_step(std::int64_t step) {
  if (!active_ || step != last_step()) return std::nullopt;
  if (cuda_) torch::cuda::synchronize();
  const double wall_seconds = double(now_ns() - started_ns_) * 1e-9;
  active_ = false;
  const std::unique_ptr<profiler::ProfilerResult> result = profiler::disableProfiler();

  fs::create_directories(folder_);
  const std::string name = "steps_" + std::to_string(first_) + "-" + std::to_string(last_step()) + ".json";
  const fs::path path = folder_ / name;
  const fs::path partial = folder_ / (name + ".tmp");
  result->save(partial.string());
  fs::rename(partial, path);

  std::vector<ProfileEvent> events;
  const c10::DeviceType device = cuda_ ? c10::DeviceType::CUDA : c10::DeviceType::CPU;
  for (const profiler::KinetoEvent& e : result->events()) {
    if (e.deviceType() != device) continue;
    const std::int64_t lane = cuda_ ? e.deviceResourceId() : std::int64_t(e.startThreadId());
    events.push_back({e.name(), e.startNs(), e.endNs(), lane});
  }
  const std::string what = "profile of steps " + std::to_string(first_) + "-" + std::to_string(last_step()) +
                           " (" + (cuda_ ? "GPU kernels and copies" : "outermost CPU operators") +
                           "; trace: " + path.string() + "):";
  return format_profile_summary(summarize_profile(events, wall_seconds), what);
}

}  // namespace flashtrain::trainer

// training.local_batch_size = "auto": the rules that pick the micro-batch,
// torch-free so tests can state them with a fake memory measurement. The
// trainer (auto_batch.h) measures on the GPU and calls these.
//
// The candidates are powers of two that divide the global batch per rank (so
// the accumulation steps stay whole), from the largest up to a cap down to 1.
// On a GPU the probe measures each candidate's peak memory for one forward
// and backward pass of the step that will run (eager, and where the step is a
// CUDA graph also its capture: the tensors outside the graph plus the graph's
// private pool; the larger of the two), largest first, and takes the first
// that fits:
//
//   peak x kProbeMemoryMargin + optimizer state <= the memory the GPU has
//
// The margin (10%) covers what one pass does not show: allocator
// fragmentation over many steps, validation. The optimizer state (AdamW's two
// fp32 moments per parameter) does not exist yet when the probe runs; its size
// is known and added. Gradients are in the measured peak (backward allocates
// them). The peak a description prints includes the optimizer state: the
// number the progress line's `mem` shows while training.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "flashtrain/config/config.h"

namespace flashtrain::trainer {

// Peak memory times this must fit (with the optimizer state) for a batch to be taken.
constexpr double kProbeMemoryMargin = 1.1;
// The largest micro-batch the GPU probe tries.
constexpr std::int64_t kMaxProbedBatch = 256;
// The largest micro-batch auto picks on the CPU, where nothing is probed.
constexpr std::int64_t kCpuAutoBatchCap = 16;

// The sequences one rank contributes to an optimizer step: global_batch_size
// / world size, or 0 (no bound) when global_batch_size is 0 (= local x world).
std::int64_t global_batch_per_rank(const config::Config& config, std::int64_t world_size);

// The largest power of two <= `cap` that divides `per_rank` (any power of two
// <= cap when per_rank is 0: no bound). At least 1.
std::int64_t largest_batch_candidate(std::int64_t per_rank, std::int64_t cap);

// auto on the CPU (or without CUDA), without probing: the largest power of two
// <= min(16, per_rank) that divides per_rank; 16 when per_rank is 0.
std::int64_t cpu_auto_local_batch(std::int64_t per_rank);

// What one candidate's peak must fit in.
struct ProbeBudget {
  std::int64_t available_bytes = 0;        // the GPU memory this process can have
  std::int64_t optimizer_state_bytes = 0;  // added to every candidate's need
  double margin = kProbeMemoryMargin;
};

// The peak bytes allocated by one forward + backward pass at `batch`, or
// nullopt when it ran out of memory.
using MeasurePeak = std::function<std::optional<std::int64_t>(std::int64_t batch)>;

struct ProbeAttempt {
  std::int64_t batch = 0;
  std::optional<std::int64_t> peak_bytes;  // nullopt: out of memory
  std::int64_t needed_bytes = 0;           // peak x margin + optimizer state (0 when out of memory)
  bool fits = false;
};

struct ProbeResult {
  std::int64_t batch = 0;  // the largest candidate that fits
  std::vector<ProbeAttempt> attempts;  // in the order tried, the last one the batch taken
};

// Tries largest_batch_candidate(per_rank, cap), then halves down to 1, and
// returns the first that fits `budget`. Throws std::runtime_error when even a
// batch of 1 does not fit, naming the memory it needs (or that it ran out).
ProbeResult probe_local_batch(std::int64_t per_rank, std::int64_t cap, const ProbeBudget& budget,
                              const MeasurePeak& measure);

// The probe's story, for the start-up line: "256 out of memory, 128 needs
// 90.1 GiB of 79.2, 64 fits with 41.3 GiB peak".
std::string describe_probe(const ProbeResult& result, const ProbeBudget& budget);

// A resumed run with auto keeps the checkpoint's local batch size when it
// still fits (<= what the probe found, and dividing the batch per rank), so
// that the run goes on with the same layout; otherwise the probe's. `saved`
// is 0 when the checkpoint does not know it.
std::int64_t prefer_saved_local_batch(std::int64_t probed, std::int64_t saved, std::int64_t per_rank);

// "41.3 GiB"
std::string format_gib(std::int64_t bytes);

}  // namespace flashtrain::trainer

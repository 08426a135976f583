#include "flashtrain/trainer/batch/batch_probe.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace flashtrain::trainer {

std::int64_t global_batch_per_rank(const config::Config& config, std::int64_t world_size) {
  const std::int64_t global = config.training.global_batch_size;
  return global == 0 ? 0 : global / std::max<std::int64_t>(world_size, 1);
}

std::int64_t largest_batch_candidate(std::int64_t per_rank, std::int64_t cap) {
  std::int64_t batch = 1;
  while (batch * 2 <= cap && (per_rank == 0 || per_rank % (batch * 2) == 0)) batch *= 2;
  return batch;
}

std::int64_t cpu_auto_local_batch(std::int64_t per_rank) {
  return largest_batch_candidate(per_rank, kCpuAutoBatchCap);
}

std::string format_gib(std::int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", double(bytes) / double(std::int64_t{1} << 30));
  return text;
}

ProbeResult probe_local_batch(std::int64_t per_rank, std::int64_t cap, const ProbeBudget& budget,
                              const MeasurePeak& measure) {
  ProbeResult result;
  for (std::int64_t batch = largest_batch_candidate(per_rank, cap); batch >= 1; batch /= 2) {
    ProbeAttempt attempt;
    attempt.batch = batch;
    attempt.peak_bytes = measure(batch);
    if (attempt.peak_bytes) {
      attempt.needed_bytes =
          std::int64_t(std::ceil(double(*attempt.peak_bytes) * budget.margin)) + budget.optimizer_state_bytes;
      attempt.fits = attempt.needed_bytes <= budget.available_bytes;
    }
    result.attempts.push_back(attempt);
    if (attempt.fits) {
      result.batch = batch;
      return result;
    }
  }
  const ProbeAttempt& last = result.attempts.back();  // batch 1
  char margin[16];
  std::snprintf(margin, sizeof margin, "%g", budget.margin);
  if (!last.peak_bytes)
    throw std::runtime_error("training.local_batch_size = auto: even a batch of 1 runs out of GPU memory (" +
                             format_gib(budget.available_bytes) +
                             " available); the model does not fit this GPU: make it smaller or use a larger GPU");
  throw std::runtime_error("training.local_batch_size = auto: even a batch of 1 needs " +
                           format_gib(last.needed_bytes) + " (peak " + format_gib(*last.peak_bytes) + " x margin " +
                           margin + " + optimizer state " + format_gib(budget.optimizer_state_bytes) + "), but the GPU has " +
                           format_gib(budget.available_bytes) +
                           "; make the model smaller, use a larger GPU, or set training.local_batch_size = 1 to try anyway");
}

std::string describe_probe(const ProbeResult& result, const ProbeBudget& budget) {
  std::string text;
  for (const ProbeAttempt& a : result.attempts) {
    text += (text.empty() ? "" : ", ") + std::to_string(a.batch);
    if (!a.peak_bytes) {
      text += " out of memory";
    } else if (a.fits) {
      text += " fits with " + format_gib(*a.peak_bytes + budget.optimizer_state_bytes) + " peak";
    } else {
      // "90.1 GiB of 79.2": the GiB of the budget without its unit.
      std::string available = format_gib(budget.available_bytes);
      available = available.substr(0, available.find(' '));
      text += " needs " + format_gib(a.needed_bytes) + " of " + available;
    }
  }
  return text;
}

std::int64_t prefer_saved_local_batch(std::int64_t probed, std::int64_t saved, std::int64_t per_rank) {
  if (saved <= 0 || saved > probed) return probed;
  if (per_rank != 0 && per_rank % saved != 0) return probed;
  return saved;
}

}  // namespace flashtrain::trainer

#include "flashtrain/trainer/step/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "flashtrain/config/consistency.h"

namespace flashtrain::trainer {

LrSchedule::LrSchedule(const config::Config& config)
    : peak_(config.optimizer.lr),
      minimum_(config.optimizer.lr * config.lr_scheduler.min_lr_ratio),
      warmup_steps_(config.lr_scheduler.warmup_steps),
      total_steps_(config.training.steps),
      decay_(config.lr_scheduler.decay),
      wsd_decay_steps_(config::wsd_decay_steps(config)) {}

double LrSchedule::at(std::int64_t step) const {
  if (step < 1) throw std::invalid_argument("LrSchedule::at: steps start at 1, got " + std::to_string(step));
  step = std::min(step, total_steps_);
  // Warm-up ends at peak on step warmup_steps; step 1 already gets peak / warmup.
  if (step <= warmup_steps_) return peak_ * double(step) / double(warmup_steps_);
  if (decay_ == "constant") return peak_;
  if (decay_ == "cosine") {
    const double progress = double(step - warmup_steps_) / double(total_steps_ - warmup_steps_);
    return minimum_ + (peak_ - minimum_) * 0.5 * (1.0 + std::cos(M_PI * progress));
  }
  if (decay_ == "wsd") {
    const std::int64_t decay_start = total_steps_ - wsd_decay_steps_;
    if (step <= decay_start) return peak_;
    return peak_ - (peak_ - minimum_) * double(step - decay_start) / double(wsd_decay_steps_);
  }
  throw std::invalid_argument("LrSchedule: unknown decay '" + decay_ + "'");
}

}  // namespace flashtrain::trainer

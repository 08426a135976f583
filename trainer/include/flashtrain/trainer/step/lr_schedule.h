// The learning rate of every optimizer step, from [optimizer] and [lr_scheduler]:
// a linear warm-up from 0 to optimizer.lr, then
//   cosine:   half a cosine from lr down to min_lr_ratio x lr at the last step;
//   wsd:      warm-up, stable at lr, then a linear decay to min_lr_ratio x lr
//             over the last decay_ratio x steps (warmup-stable-decay);
//   constant: lr.
// Steps are 1-based: at(1) is the rate of the first update, at(steps) of the
// last. A pure function of the step, so a resumed run uses the same rates.
#pragma once

#include <cstdint>
#include <string>

#include "flashtrain/config/config.h"

namespace flashtrain::trainer {

class LrSchedule {
 public:
  explicit LrSchedule(const config::Config& config);

  double at(std::int64_t step) const;

  double peak() const { return peak_; }
  double minimum() const { return minimum_; }

 private:
  double peak_;
  double minimum_;
  std::int64_t warmup_steps_;
  std::int64_t total_steps_;
  std::string decay_;
  std::int64_t wsd_decay_steps_;
};

}  // namespace flashtrain::trainer

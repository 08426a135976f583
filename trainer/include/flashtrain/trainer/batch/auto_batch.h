// training.local_batch_size = "auto" for a training run: the rules of
// batch_probe.h, with the measurement on the run's GPU.
#pragma once

#include <cstdint>
#include <iosfwd>

#include "flashtrain/config/resolved_config.h"
#include "flashtrain/trainer/run/world.h"

namespace flashtrain::trainer {

// The local batch size to train with, and one line about it in `log`:
//
//   local batch: auto -> 64 (probe on cuda:0 with 79.1 GiB available, optimizer state
//   1.0 GiB, margin 1.1: 256 out of memory, 128 needs 90.1 GiB of 79.1, 64 fits with 41.3 GiB peak)
//
// On the CPU nothing is probed: cpu_auto_local_batch. On a GPU each rank
// probes its own GPU (a throwaway model of the run's config, synthetic batches
// of the run's context and precision) and the ranks take the smallest result.
// `saved_local_batch` (rank 0's; 0 = none or unknown) is the local batch size
// of the checkpoint the run is about to resume: kept when it still fits
// (prefer_saved_local_batch), so the resumed layout does not change.
//
// Call it before the run's model is built: the throwaway model is built by
// build_model, which seeds torch's generators with training.seed, as the
// run's own build_model does again after it; the run's weights and random
// streams are those of a run without the probe. Throws std::runtime_error when
// even a batch of 1 does not fit.
std::int64_t resolve_auto_local_batch(const config::ResolvedConfig& resolved, const World& world,
                                      std::int64_t vocab_size, std::int64_t saved_local_batch, std::ostream& log);

}  // namespace flashtrain::trainer

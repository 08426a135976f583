// The rules that decide how a run spreads over ranks, torch-free so tests can
// state them directly: which device a rank trains on, whether the config's
// parallelism.nproc fits the launcher that started us, and how a checkpoint
// written by one world size continues on another.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "flashtrain/distributed/environment.h"

namespace flashtrain::trainer {

// training.device for rank `local_rank` of a distributed run: "cpu" stays on
// the CPU; "auto" and "cuda" become "cuda:<local_rank>" when `gpu_count` GPUs
// are visible (auto falls back to "cpu" without any). Throws
// std::invalid_argument for cuda without enough GPUs, or a "cuda:N" (one fixed
// GPU cannot serve several ranks).
std::string choose_rank_device(const std::string& setting, int local_rank, int gpu_count);

// Whether `flashtrain` should start parallelism.nproc ranks itself: nproc > 1
// and no launcher started this process (no torchrun variables, and SLURM, if
// any, with a single task).
bool should_launch_ranks(std::int64_t nproc, const distributed::Environment& env);

// In a rank that a launcher started: parallelism.nproc must be 1 or the world
// size. Throws std::invalid_argument otherwise.
void check_nproc_fits(std::int64_t nproc, const distributed::Environment& env);

// How an optimizer step's batch is laid out over ranks.
struct BatchLayout {
  std::int64_t world_size = 1;
  std::int64_t local_batch_size = 1;
  std::int64_t accumulation = 1;
  std::int64_t global_batch() const { return world_size * local_batch_size * accumulation; }
};

// Resuming a checkpoint written with `saved` under `now`. The data streams are
// indexed by global sample (the loader's cursor counts the windows of all
// ranks together), so a new world size re-shards them: rank r continues with
// the samples a world of `now` would give it from that index. Returns notes
// for the log (empty when nothing changed). `position` is the token-shard
// loader's windows consumed in the current epoch (nullopt for task streams,
// which continue from any index); it must be a whole number of the new
// micro-batch rows (world x local batch), else this throws std::runtime_error
// saying which world sizes would fit.
std::vector<std::string> plan_resume_layout(const BatchLayout& saved, const BatchLayout& now,
                                            std::optional<std::int64_t> position);

}  // namespace flashtrain::trainer

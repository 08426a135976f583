// What a training checkpoint holds and how it is written and read. A
// checkpoint is a directory (checkpoint_folder.h names it, staged_directory.h
// makes it appear whole or not at all):
//
//   model.safetensors      the parameters, under their dotted names
//   optimizer.safetensors  AdamW's moments and step counts (optimizer.h) and the
//                          random generators' states ("rng.cpu", "rng.cuda")
//   state.json             step, tokens seen, the NaN/Inf guard's counters, the data cursor,
//                          the world size and batch layout it was written with
//   config.json            the resolved config (config::to_json)
//   manifest.json          every file's size and checksum; written last
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/optim/adamw.h>

#include "flashtrain/config/config.h"
#include "flashtrain/models/language_model.h"

namespace flashtrain::trainer {

struct TrainingProgress {
  std::int64_t step = 0;
  std::int64_t tokens_seen = 0;
  std::int64_t nonfinite_in_row = 0;
  std::int64_t nonfinite_total = 0;
  nlohmann::json data_cursor;  // global: the same on every rank
  // The batch layout the checkpoint was written with (world_rules.h);
  // checkpoints from before data parallelism read as one rank, local batch 0
  // (unknown).
  std::int64_t world_size = 1;
  std::int64_t local_batch_size = 0;
  std::int64_t accumulation = 1;
  // A CPU run's intra-op threads (0: a GPU run, or not recorded): its sums
  // split over them, so the count is part of what makes a resume bitwise.
  std::int64_t cpu_threads = 0;
};

// Writes the checkpoint to `directory`, which must not exist.
void save_checkpoint(const std::filesystem::path& directory, const TrainingProgress& progress,
                     const models::LanguageModelImpl& model, const torch::optim::AdamW& optimizer,
                     const config::Config& config);

struct CheckpointContents {
  TrainingProgress progress;
  nlohmann::json config;  // as saved (config::to_json)
};

// Checks the files against the manifest (unless `verified`: the caller just
// did, e.g. CheckpointFolder::latest_valid) and the saved [model] against
// `config`'s (check_same_model), then loads the parameters into `model` and,
// when `optimizer` is given, the optimizer state and the random generators'
// states. Throws std::runtime_error naming the problem.
CheckpointContents load_checkpoint(const std::filesystem::path& directory, const config::Config& config,
                                   models::LanguageModelImpl& model, torch::optim::AdamW* optimizer,
                                   bool verified = false);

// The local batch size a checkpoint's state.json records, without checking
// or loading anything else; 0 when it has none (older checkpoints) or cannot
// be read.
std::int64_t saved_local_batch_size(const std::filesystem::path& directory);

// <job.dump_folder>/<checkpoint.folder>
std::filesystem::path checkpoint_folder_path(const config::Config& config);

// The checkpoint eval, sample and export read: `explicit_directory` when given,
// else the newest valid one of the run (skipped ones are reported to `log`).
// Throws std::runtime_error when there is none.
std::filesystem::path choose_checkpoint(const config::Config& config, const std::string& explicit_directory,
                                        std::ostream& log);

// Throws std::runtime_error listing the [model] keys in which `saved` (a
// checkpoint's config.json) differs from `config`: such a checkpoint cannot be
// loaded into the model `config` builds.
void check_same_model(const nlohmann::json& saved, const config::Config& config, const std::string& source);

// The keys outside [model] whose values differ: "training.steps: 100 -> 200"
// (saved -> current), for the note a resumed run prints.
std::vector<std::string> config_changes(const nlohmann::json& saved, const config::Config& config);

}  // namespace flashtrain::trainer

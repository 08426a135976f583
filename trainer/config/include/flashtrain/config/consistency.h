// Checks of relations between keys, and of the world the config meets at run
// time. Each throws a ConfigError located at the key that was set last among
// those involved (ResolvedConfig::error_at), naming every key and its value.
#pragma once

#include <cstdint>

#include "flashtrain/config/resolved_config.h"

namespace flashtrain::config {

// The cross-key checks (load_config runs them): block list vs n_layers, heads
// vs dim, the retaining-gate bias range, batch sizes vs the data-parallel size, task lengths vs seq_len,
// the wsd phases vs steps, a data source and a vocabulary size.
void check_consistency(const ResolvedConfig& resolved);

// The data-parallel size the config asks for before launch: parallelism.
// data_parallel, or nproc when that is 0 (the launcher decides; 1 alone).
std::int64_t planned_world_size(const Config& config);

// At start-up, with the launcher's world size: data_parallel must match it
// and global_batch_size must divide into local batches over it.
void check_world_size(const ResolvedConfig& resolved, std::int64_t world_size);

// Micro-batches per optimizer step (gradient accumulation) at `world_size`;
// 1 when global_batch_size is 0. Assumes check_world_size passed and a
// resolved local_batch_size (std::logic_error for auto).
std::int64_t accumulation_steps(const Config& config, std::int64_t world_size);

// Steps of the final decay of the wsd schedule: decay_ratio x training.steps,
// rounded to the nearest integer.
std::int64_t wsd_decay_steps(const Config& config);

// The files the config names exist: the tokenizer model, at least one shard
// per glob, and a resume path other than latest/none (language modelling;
// a task reads no files).
void check_input_files(const ResolvedConfig& resolved);

}  // namespace flashtrain::config

// The trainer's configuration as plain typed structs, one per TOML section
// (torchtitan's vocabulary). The member initialisers are the defaults; the
// schema (schema.h) gives every key its doc string and its check, and the
// loader (load.h) fills these structs from a file and command-line flags.
// A section a component owns is that component's struct, its keys' rows
// beside it: [model] is flashtrain/models/model_config.h.
//
// Choice-valued keys are strings; after loading they are guaranteed to be one
// of the choices the schema lists for them.
//
//   ResolvedConfig resolved = load_config("configs/quickstart.toml", flags);
//   const Config& config = resolved.config;
//   int64_t steps = config.training.steps;
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "flashtrain/models/model_config.h"  // torch-free: the [model] section

namespace flashtrain::config {

struct JobConfig {
  std::string name = "flashtrain";
  std::string dump_folder = "outputs";
  std::string description = "";
};

// The [model] section belongs to the models it describes (its keys' rows too).
using ModelConfig = models::ModelConfig;

struct TokenizerConfig {
  std::string path = ".data/corpus/tokenizer.model";
};

struct DataConfig {
  std::string train_shards = ".data/corpus/train_*.bin";
  std::string val_shards = ".data/corpus/val_*.bin";
  std::int64_t seq_len = 1024;
  bool shuffle = true;
  std::string task = "";  // "": language modelling on the shards
  std::int64_t task_train_min_len = 3;
  std::int64_t task_train_max_len = 40;
  std::int64_t task_val_min_len = 40;
  std::int64_t task_val_max_len = 256;
  std::int64_t task_val_long_max_len = 0;  // 0: no second test band
  bool task_mask_answer = true;
  std::int64_t task_majority_alphabet = 63;
  bool task_brackets_multiplication = true;
  // The longest task sequence any split draws (the generators' max_length).
  std::int64_t task_max_len() const {
    return std::max({task_train_max_len, task_val_max_len, task_val_long_max_len});
  }
};

struct OptimizerConfig {
  std::string name = "adamw";
  double lr = 6e-4;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;
};

struct LrSchedulerConfig {
  std::int64_t warmup_steps = 100;
  std::string decay = "cosine";
  double decay_ratio = 0.2;
  double min_lr_ratio = 0.1;
};

struct TrainingConfig {
  // local_batch_size = "auto" (in a file or a flag) is stored as this until the
  // trainer resolves it at start-up (batch_probe.h) into the size it trains with.
  static constexpr std::int64_t kAutoLocalBatch = 0;

  std::int64_t steps = 1000;
  std::int64_t local_batch_size = 8;  // kAutoLocalBatch: "auto"
  std::int64_t global_batch_size = 0;  // 0: local_batch_size x data-parallel size
  double grad_clip = 1.0;
  std::string mixed_precision = "bf16";
  std::int64_t seed = 42;
  std::string device = "auto";
  std::int64_t max_nonfinite_steps = 5;
  // auto: the step as one CUDA graph where it can be (a GPU, static shapes),
  // else eager; on: a graph or an error; off: eager.
  std::string cuda_graph = "auto";
  double target_loss = 0.0;  // stop once a log window's mean training loss is at most this; 0: never
  std::int64_t profile_steps = 0;  // > 0: profile this many steps (step_profiler.h)

  bool auto_local_batch() const { return local_batch_size == kAutoLocalBatch; }
};

struct ValidationConfig {
  std::int64_t every = 250;  // 0: never
  std::int64_t steps = 20;
};

struct CheckpointConfig {
  bool enable = true;
  std::string folder = "checkpoints";
  std::int64_t interval = 500;  // 0: only at the end and on a signal
  std::int64_t keep_last = 3;   // 0: keep all
  std::string resume = "latest";
  // On resume: continue the checkpoint's data stream exactly (true), or keep
  // its weights, optimizer state and step and draw the data afresh from the
  // start of this config's stream (false: after changing the seed, the
  // shuffle, the window length or the shards).
  bool resume_data = true;
};

struct MetricsConfig {
  std::int64_t log_every = 10;
  std::string jsonl = "metrics.jsonl";  // "": none
};

struct ParallelismConfig {
  std::int64_t data_parallel = 0;  // 0: the launcher's world size
  std::int64_t nproc = 1;
  double bucket_size_mb = 25.0;
  // With training.cuda_graph: the all-reduce inside the step's graph, or
  // eagerly between a graph of forward+backward and one of the update.
  bool allreduce_in_graph = true;
  std::string backend = "auto";   // nccl | store | auto
  double timeout_seconds = 600.0;
};

struct DebugConfig {
  bool anomaly_detection = false;
  bool deterministic = false;
};

struct Config {
  JobConfig job;
  ModelConfig model;
  TokenizerConfig tokenizer;
  DataConfig data;
  OptimizerConfig optimizer;
  LrSchedulerConfig lr_scheduler;
  TrainingConfig training;
  ValidationConfig validation;
  CheckpointConfig checkpoint;
  MetricsConfig metrics;
  ParallelismConfig parallelism;
  DebugConfig debug;
};

// Every key equal (floats compared exactly).
bool operator==(const Config& a, const Config& b);
inline bool operator!=(const Config& a, const Config& b) { return !(a == b); }

}  // namespace flashtrain::config

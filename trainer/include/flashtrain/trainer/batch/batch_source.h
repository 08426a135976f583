// Batches for the loop and for evaluation: next-token windows from token
// shards, or state-tracking task samples, as int64 tensors on the device.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "flashtrain/config/config.h"
#include "flashtrain/trainer/batch/task_setup.h"

namespace flashtrain::trainer {

struct Batch {
  torch::Tensor inputs;   // [B, T] int64
  torch::Tensor targets;  // [B, T] int64; data::kIgnoreTarget (-100) where no loss is taken
  std::int64_t scored_tokens = 0;  // targets that are not ignored (counted on the host)
  std::vector<std::int32_t> lengths;  // tasks: tokens of each sequence (answer included); shards: empty
};

// A checkpoint's data cursor that a stream of these settings cannot continue:
// the config key whose value differs (training.seed, data.shuffle,
// data.seq_len, data.train_shards, data.task), as saved and as now.
class DataStreamMismatch : public std::runtime_error {
 public:
  DataStreamMismatch(const std::string& what, std::string key, std::string saved, std::string now)
      : std::runtime_error(what), key(std::move(key)), saved(std::move(saved)), now(std::move(now)) {}
  std::string key;
  std::string saved;
  std::string now;
};

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  virtual Batch next() = 0;
  // Where the stream stands, for checkpoints; restore() continues exactly,
  // throws DataStreamMismatch for a cursor of this kind saved with other
  // settings and std::runtime_error for a cursor of another kind.
  virtual nlohmann::json cursor() const = 0;
  virtual void restore(const nlohmann::json& cursor) = 0;
  // One line for the start-up report.
  virtual std::string describe() const = 0;
};

// Training batches of training.local_batch_size sequences of
// train_context(config) tokens (task_setup.h): the shard loader over
// data.train_shards (seed training.seed, data.shuffle), windows of
// data.seq_len, or the task generator when data.task is set, padded to
// data.task_train_max_len. Rank `rank` of `world_size`
// gets its own disjoint slice: each micro-step takes the next world_size x B
// samples of one global stream and rank r the r-th B of them. The cursor
// counts the samples of all ranks, so it is the same on every rank and a
// checkpoint continues on another world size (world_rules.h).
std::unique_ptr<BatchSource> make_train_batches(const config::Config& config, std::int64_t vocab_size,
                                                torch::Device device, int rank = 0, int world_size = 1);

// Validation batches, the same ones at every call: data.val_shards in file
// order, or the task's validation stream in its "test" band
// (task_validation_bands), padded to data.task_val_max_len. Like training data they
// are indexed globally (rank r takes its local batch after those of ranks
// before it), so the validation set -- validation.steps global batches -- is
// the same rows on any number of ranks.
std::unique_ptr<BatchSource> make_validation_batches(const config::Config& config, std::int64_t vocab_size,
                                                     torch::Device device, int rank = 0, int world_size = 1);

// The validation batches of one of a task's bands (task_setup.h), padded to
// its longest sequence; make_validation_batches gives those of "test".
std::unique_ptr<BatchSource> make_task_band_batches(const config::Config& config, const TaskBand& band,
                                                    torch::Device device, int rank = 0, int world_size = 1);

// Local batches each rank evaluates for one validation: validation.steps x
// the accumulation steps of this world size.
std::int64_t validation_batches_per_rank(const config::Config& config, int world_size);

}  // namespace flashtrain::trainer

// The state-tracking task a config describes ([data] task keys), for the
// batches, the vocabulary size and the scores.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "flashtrain/config/config.h"
#include "flashtrain/data/tasks.h"

namespace flashtrain::trainer {

enum class Split { kTrain, kValidation };

// data.task with the split's length range; options.max_length covers every
// length a run draws, so train and validation share one vocabulary. data.task
// must be set.
data::TaskSpec task_spec(const config::DataConfig& data, Split split);

// A range of lengths the validation of a task scores, drawn from the
// validation stream.
struct TaskBand {
  std::string name;
  data::LengthRange lengths;
  // Per-position (Format 2) tasks score no position before this one: a test
  // band scores only the positions beyond the training lengths, where the
  // model has never been trained. 0 for the other formats.
  std::int64_t first_scored_position = 0;
};

// The bands a task's validation scores, the one the run is judged on first:
// "test" (data.task_val_min_len .. task_val_max_len), "train" (the training
// lengths: did the run fit them?) and, with data.task_val_long_max_len > 0,
// "long" (task_val_max_len + 1 .. task_val_long_max_len). data.task must be set.
std::vector<TaskBand> task_validation_bands(const config::DataConfig& data);

// data.task over the band's lengths (the vocabulary of task_spec).
data::TaskSpec task_spec(const config::DataConfig& data, const TaskBand& band);

// The context a split's task batches are padded to: the split's longest
// sequence (data.task_train_max_len or data.task_val_max_len). The models are
// causal and each answer sits at its sequence's last position, so padding
// further would change no score, only the cost. data.task must be set.
std::int64_t task_context(const config::DataConfig& data, Split split);

// Tokens per training sequence: task_context(kTrain) for a task, data.seq_len
// for token shards (what tokens_per_step and FLOPs per token count).
std::int64_t train_context(const config::Config& config);

// The sample stream of a split: training draws from training.seed, validation
// from a stream derived from it that training never reads.
std::uint64_t task_stream_seed(const config::Config& config, Split split);

}  // namespace flashtrain::trainer

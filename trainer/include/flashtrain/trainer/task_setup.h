// The state-tracking task a config describes ([data] task keys), for the
// batches, the vocabulary size and the scores.
#pragma once

#include <cstdint>

#include "flashtrain/config/config.h"
#include "flashtrain/data/tasks.h"

namespace flashtrain::trainer {

enum class Split { kTrain, kValidation };

// data.task with the split's length range; options.max_length covers both
// splits, so train and validation share one vocabulary. data.task must be set.
data::TaskSpec task_spec(const config::DataConfig& data, Split split);

// The sample stream of a split: training draws from training.seed, validation
// from a stream derived from it that training never reads.
std::uint64_t task_stream_seed(const config::Config& config, Split split);

}  // namespace flashtrain::trainer

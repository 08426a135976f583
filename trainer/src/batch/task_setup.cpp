#include "flashtrain/trainer/batch/task_setup.h"

#include <algorithm>
#include <stdexcept>

namespace flashtrain::trainer {

data::TaskSpec task_spec(const config::DataConfig& d, Split split) {
  if (d.task.empty()) throw std::invalid_argument("task_spec: data.task is not set");
  data::TaskSpec spec;
  spec.task = data::parse_task(d.task);
  spec.options.max_length = int(d.task_max_len());
  spec.options.majority_alphabet = int(d.task_majority_alphabet);
  spec.options.brackets_multiplication = d.task_brackets_multiplication;
  if (split == Split::kTrain) spec.lengths = {int(d.task_train_min_len), int(d.task_train_max_len)};
  else spec.lengths = {int(d.task_val_min_len), int(d.task_val_max_len)};
  return spec;
}

std::vector<TaskBand> task_validation_bands(const config::DataConfig& d) {
  if (d.task.empty()) throw std::invalid_argument("task_validation_bands: data.task is not set");
  const bool per_position = data::task_format(data::parse_task(d.task)) == data::TaskFormat::kPerPosition;
  const std::int64_t beyond_training = per_position ? d.task_train_max_len : 0;
  std::vector<TaskBand> bands = {
      {"test", {int(d.task_val_min_len), int(d.task_val_max_len)}, beyond_training},
      {"train", {int(d.task_train_min_len), int(d.task_train_max_len)}, 0}};
  if (d.task_val_long_max_len > 0)
    bands.push_back({"long", {int(d.task_val_max_len + 1), int(d.task_val_long_max_len)}, beyond_training});
  return bands;
}

data::TaskSpec task_spec(const config::DataConfig& d, const TaskBand& band) {
  data::TaskSpec spec = task_spec(d, Split::kValidation);
  spec.lengths = band.lengths;
  return spec;
}

std::int64_t task_context(const config::DataConfig& d, Split split) {
  if (d.task.empty()) throw std::invalid_argument("task_context: data.task is not set");
  return split == Split::kTrain ? d.task_train_max_len : d.task_val_max_len;
}

std::int64_t train_context(const config::Config& config) {
  return config.data.task.empty() ? config.data.seq_len : task_context(config.data, Split::kTrain);
}

std::uint64_t task_stream_seed(const config::Config& config, Split split) {
  const auto seed = std::uint64_t(config.training.seed);
  // Any fixed odd constant works; this one (2^64 / golden ratio) spreads bits.
  return split == Split::kTrain ? seed : seed ^ 0x9e3779b97f4a7c15ULL;
}

}  // namespace flashtrain::trainer

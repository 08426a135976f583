#include <algorithm>
#include <stdexcept>
#include <string>

#include "flashtrain/data/tasks.h"

namespace flashtrain::data {

TaskBatch make_task_batch(const TaskSpec& spec, std::uint64_t seed, std::uint64_t first_index,
                          std::int64_t batch_size, std::int64_t context, bool mask_answer) {
  if (batch_size <= 0) throw std::invalid_argument("batch_size must be positive");
  if (context < spec.lengths.max_len) {
    throw std::invalid_argument("context " + std::to_string(context) + " is shorter than max_len " +
                                std::to_string(spec.lengths.max_len) + " of task " +
                                std::string(to_string(spec.task)));
  }
  const std::int32_t pad = task_vocabulary(spec.task, spec.options).pad_id;
  const bool answer_last = task_format(spec.task) == TaskFormat::kAnswerLast;

  TaskBatch batch;
  batch.batch_size = batch_size;
  batch.context = context;
  batch.input.assign(static_cast<std::size_t>(batch_size * context), pad);
  batch.target.assign(static_cast<std::size_t>(batch_size * context), kIgnoreTarget);
  batch.length.resize(static_cast<std::size_t>(batch_size));
  for (std::int64_t b = 0; b < batch_size; ++b) {
    const TaskSample s = generate_sample(spec, seed, first_index + static_cast<std::uint64_t>(b));
    const auto n = static_cast<std::int64_t>(s.tokens.size());
    std::int32_t* input = batch.input.data() + b * context;
    std::int32_t* target = batch.target.data() + b * context;
    std::copy(s.tokens.begin(), s.tokens.end(), input);
    if (answer_last) {
      const std::int64_t answer_position = n - 1;
      if (mask_answer) {
        input[answer_position] = pad;
        target[answer_position] = s.tokens.back();
      } else {
        target[answer_position - 1] = s.tokens.back();
      }
    } else {
      std::copy(s.targets.begin(), s.targets.end(), target);
    }
    batch.length[static_cast<std::size_t>(b)] = static_cast<std::int32_t>(n);
  }
  return batch;
}

}  // namespace flashtrain::data

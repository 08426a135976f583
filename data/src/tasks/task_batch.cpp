#include <algorithm>
#include <stdexcept>
#include <string>

#include "flashtrain/data/tasks.h"

namespace flashtrain::data {

TaskBatch make_task_batch(const TaskSpec& spec, std::uint64_t seed, std::uint64_t first_index,
                          std::int64_t batch_size, std::int64_t context, bool mask_answer,
                          std::int64_t first_scored_position) {
  if (batch_size <= 0) throw std::invalid_argument("batch_size must be positive");
  if (context < spec.lengths.max_len) {
    throw std::invalid_argument("context " + std::to_string(context) + " is shorter than max_len " +
                                std::to_string(spec.lengths.max_len) + " of task " +
                                std::string(to_string(spec.task)));
  }
  const std::int32_t pad = task_vocabulary(spec.task, spec.options).pad_id;
  if (first_scored_position < 0)
    throw std::invalid_argument("first_scored_position must be >= 0, got " + std::to_string(first_scored_position));
  const bool per_position = task_format(spec.task) == TaskFormat::kPerPosition;

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
    if (per_position) {
      for (std::int64_t p = first_scored_position; p < n; ++p) target[p] = s.targets[std::size_t(p)];
    } else {
      for (std::int64_t p = n - s.answer_tokens; p < n; ++p) {
        if (mask_answer) {
          input[p] = pad;
          target[p] = s.tokens[std::size_t(p)];
        } else {
          target[p - 1] = s.tokens[std::size_t(p)];
        }
      }
    }
    batch.length[static_cast<std::size_t>(b)] = static_cast<std::int32_t>(n);
  }
  return batch;
}

}  // namespace flashtrain::data

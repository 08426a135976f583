// The public task API (tasks.h) over the per-task definitions.
#include <array>
#include <stdexcept>

#include "task_definition.h"

namespace flashtrain::data {
namespace {

using tasks::TaskDefinition;
using tasks::Tokens;

// Every task, in the order all_tasks() lists them.
const std::array<const TaskDefinition*, 12>& definitions() {
  static const std::array<const TaskDefinition*, 12> all = {
      &tasks::parity_task(),           &tasks::even_pairs_task(),
      &tasks::cycle_navigation_task(), &tasks::modular_arithmetic_task(),
      &tasks::modular_arithmetic_brackets_task(), &tasks::majority_task(),
      &tasks::majority_count_task(),   &tasks::s5_task(),
      &tasks::z60_task(),              &tasks::bucket_sort_task(),
      &tasks::missing_duplicate_task(), &tasks::solve_equation_task()};
  return all;
}

const TaskDefinition& definition(Task task) {
  for (const TaskDefinition* d : definitions()) {
    if (d->task == task) return *d;
  }
  throw std::invalid_argument("unknown Task value " + std::to_string(static_cast<int>(task)));
}

void check_lengths(const TaskDefinition& d, const TaskSpec& spec) {
  const LengthRange& r = spec.lengths;
  const std::string task(d.name);
  if (r.min_len < d.min_length) {
    throw std::invalid_argument(task + ": min_len " + std::to_string(r.min_len) +
                                " is below the task's shortest sequence, " +
                                std::to_string(d.min_length) + " tokens");
  }
  if (r.max_len < r.min_len) {
    throw std::invalid_argument(task + ": max_len " + std::to_string(r.max_len) + " < min_len " +
                                std::to_string(r.min_len));
  }
  if (r.max_len > spec.options.max_length) {
    throw std::invalid_argument(task + ": max_len " + std::to_string(r.max_len) +
                                " exceeds options.max_length " +
                                std::to_string(spec.options.max_length));
  }
  if (d.odd_lengths_only && r.min_len == r.max_len && r.min_len % 2 == 0) {
    throw std::invalid_argument(task + ": lengths must be odd, the range [" +
                                std::to_string(r.min_len) + ", " + std::to_string(r.max_len) +
                                "] holds none");
  }
}

int draw_length(Rng& rng, const TaskDefinition& d, const LengthRange& r) {
  if (!d.odd_lengths_only) return static_cast<int>(rng.between(r.min_len, r.max_len));
  const int first_odd = r.min_len | 1;
  const int odd_count = (r.max_len - first_odd) / 2 + 1;
  return first_odd + 2 * static_cast<int>(rng.below(static_cast<std::uint64_t>(odd_count)));
}

}  // namespace

const std::vector<Task>& all_tasks() {
  static const std::vector<Task> tasks = [] {
    std::vector<Task> t;
    for (const TaskDefinition* d : definitions()) t.push_back(d->task);
    return t;
  }();
  return tasks;
}

std::string_view to_string(Task task) { return definition(task).name; }

Task parse_task(std::string_view name) {
  std::string choices;
  for (const TaskDefinition* d : definitions()) {
    if (d->name == name) return d->task;
    choices += (choices.empty() ? "" : ", ") + std::string(d->name);
  }
  throw std::invalid_argument("unknown task '" + std::string(name) + "'; choose one of " + choices);
}

TaskFormat task_format(Task task) { return definition(task).format; }
int task_min_length(Task task) { return definition(task).min_length; }

Vocabulary task_vocabulary(Task task, const TaskOptions& options) {
  return definition(task).vocabulary(options);
}

TaskSample generate_sample(const TaskSpec& spec, std::uint64_t seed, std::uint64_t index) {
  const TaskDefinition& d = definition(spec.task);
  check_lengths(d, spec);
  Rng rng(derive_seed({hash_name(d.name), seed, index}));
  const int length = draw_length(rng, d, spec.lengths);
  TaskSample sample;
  sample.tokens = d.draw_inputs(rng, length, spec.options);
  switch (d.format) {
    case TaskFormat::kAnswerLast:
      sample.tokens.push_back(d.answer(sample.tokens, spec.options));
      sample.answer_tokens = 1;
      break;
    case TaskFormat::kPerPosition:
      sample.targets = d.targets(sample.tokens);
      break;
    case TaskFormat::kOutputTape: {
      const Tokens output = d.outputs(sample.tokens, spec.options);
      sample.tokens.insert(sample.tokens.end(), output.begin(), output.end());
      sample.answer_tokens = static_cast<int>(output.size());
      break;
    }
  }
  if (static_cast<int>(sample.tokens.size()) != length)
    throw std::logic_error(std::string(d.name) + ": drew " + std::to_string(sample.tokens.size()) +
                           " tokens for a sequence of " + std::to_string(length));
  return sample;
}

std::int32_t task_answer(Task task, const TaskOptions& options, const std::vector<std::int32_t>& inputs) {
  const TaskDefinition& d = definition(task);
  if (d.format != TaskFormat::kAnswerLast) {
    throw std::invalid_argument(std::string(d.name) + " has no single answer; use task_targets or task_outputs");
  }
  return d.answer(inputs, options);
}

std::vector<std::int32_t> task_targets(Task task, const std::vector<std::int32_t>& inputs) {
  const TaskDefinition& d = definition(task);
  if (d.format != TaskFormat::kPerPosition) {
    throw std::invalid_argument(std::string(d.name) + " has no per-position targets; use task_answer or task_outputs");
  }
  return d.targets(inputs);
}

std::vector<std::int32_t> task_outputs(Task task, const TaskOptions& options,
                                       const std::vector<std::int32_t>& inputs) {
  const TaskDefinition& d = definition(task);
  if (d.format != TaskFormat::kOutputTape) {
    throw std::invalid_argument(std::string(d.name) + " has no output tape; use task_answer or task_targets");
  }
  return d.outputs(inputs, options);
}

}  // namespace flashtrain::data

// Private: what each task provides to the registry (task_registry.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "flashtrain/data/error.h"
#include "flashtrain/data/rng.h"
#include "flashtrain/data/tasks.h"

namespace flashtrain::data::tasks {

using Tokens = std::vector<std::int32_t>;

struct TaskDefinition {
  Task task;
  std::string_view name;
  TaskFormat format;
  int min_length;         // tokens, answer included
  bool odd_lengths_only;  // modular arithmetic without brackets
  Vocabulary (*vocabulary)(const TaskOptions&);
  // Draws the inputs of a sequence of `length` tokens: length - 1 tokens in
  // Format 1 (the answer follows), length tokens in Format 2, the inputs and
  // their separator in Format 3 (the output tape fills the rest).
  Tokens (*draw_inputs)(Rng& rng, int length, const TaskOptions& options);
  // Format 1 only: the answer token of `inputs`.
  std::int32_t (*answer)(const Tokens& inputs, const TaskOptions& options);
  // Format 2 only: the target of every position.
  Tokens (*targets)(const Tokens& inputs);
  // Format 3 only: the output tape of `inputs`.
  Tokens (*outputs)(const Tokens& inputs, const TaskOptions& options) = nullptr;
};

const TaskDefinition& parity_task();
const TaskDefinition& even_pairs_task();
const TaskDefinition& cycle_navigation_task();
const TaskDefinition& modular_arithmetic_task();
const TaskDefinition& modular_arithmetic_brackets_task();
const TaskDefinition& majority_task();
const TaskDefinition& majority_count_task();
const TaskDefinition& s5_task();
const TaskDefinition& z60_task();
const TaskDefinition& bucket_sort_task();
const TaskDefinition& missing_duplicate_task();
const TaskDefinition& solve_equation_task();

// "<task>: token <t> at position <p> is not <what>"
inline DataError bad_token(std::string_view task, std::int32_t token, std::size_t position,
                           std::string_view what) {
  return DataError(std::string(task) + ": token " + std::to_string(token) + " at position " +
                   std::to_string(position) + " is not " + std::string(what));
}

}  // namespace flashtrain::data::tasks

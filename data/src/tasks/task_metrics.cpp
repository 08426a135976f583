#include "flashtrain/data/task_metrics.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "flashtrain/data/tasks.h"

namespace flashtrain::data {

double scaled_accuracy(double accuracy, int num_classes) {
  if (num_classes < 2) {
    throw std::invalid_argument("scaled_accuracy needs at least 2 classes, got " +
                                std::to_string(num_classes));
  }
  const double chance = 1.0 / num_classes;
  return (accuracy - chance) / (1.0 - chance);
}

double AccuracyCounts::token_accuracy() const {
  return scored_tokens == 0 ? 0.0 : static_cast<double>(correct_tokens) / scored_tokens;
}

double AccuracyCounts::sequence_accuracy() const {
  return scored_sequences == 0 ? 0.0 : static_cast<double>(correct_sequences) / scored_sequences;
}

AccuracyCounts& AccuracyCounts::operator+=(const AccuracyCounts& other) {
  correct_tokens += other.correct_tokens;
  scored_tokens += other.scored_tokens;
  correct_sequences += other.correct_sequences;
  scored_sequences += other.scored_sequences;
  return *this;
}

AccuracyCounts count_correct(const std::int32_t* predictions, const std::int32_t* targets,
                             std::int64_t rows, std::int64_t columns) {
  AccuracyCounts counts;
  for (std::int64_t r = 0; r < rows; ++r) {
    std::int64_t scored = 0, correct = 0;
    for (std::int64_t c = 0; c < columns; ++c) {
      const std::int64_t i = r * columns + c;
      if (targets[i] == kIgnoreTarget) continue;
      ++scored;
      correct += predictions[i] == targets[i];
    }
    counts.scored_tokens += scored;
    counts.correct_tokens += correct;
    if (scored > 0) {
      ++counts.scored_sequences;
      counts.correct_sequences += correct == scored;
    }
  }
  return counts;
}

LengthCounts& LengthCounts::operator+=(const LengthCounts& other) {
  const std::size_t size = std::max(correct.size(), other.correct.size());
  correct.resize(size, 0);
  total.resize(size, 0);
  for (std::size_t length = 0; length < other.correct.size(); ++length) {
    correct[length] += other.correct[length];
    total[length] += other.total[length];
  }
  return *this;
}

LengthCounts count_correct_by_length(const std::int32_t* predictions, const std::int32_t* targets,
                                     const std::int32_t* lengths, std::int64_t rows, std::int64_t columns) {
  LengthCounts counts;
  counts.correct.assign(std::size_t(columns + 1), 0);
  counts.total.assign(std::size_t(columns + 1), 0);
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int32_t length = lengths[r];
    if (length < 0 || length > columns)
      throw std::invalid_argument("count_correct_by_length: row " + std::to_string(r) + " has length " +
                                  std::to_string(length) + ", outside the [0, " + std::to_string(columns) +
                                  "] tokens of a row");
    // Each row alone: count_correct says whether it was scored and all right.
    const AccuracyCounts row = count_correct(predictions + r * columns, targets + r * columns, 1, columns);
    counts.total[std::size_t(length)] += row.scored_sequences;
    counts.correct[std::size_t(length)] += row.correct_sequences;
  }
  return counts;
}

}  // namespace flashtrain::data

#include "flashtrain/data/task_metrics.h"

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

}  // namespace flashtrain::data

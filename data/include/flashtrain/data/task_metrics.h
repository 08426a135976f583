// Scores for the state-tracking tasks, on plain int32 buffers.
#pragma once

#include <cstdint>

namespace flashtrain::data {

// (accuracy - 1/C) / (1 - 1/C): 0 at chance, 1 when perfect, negative below
// chance. C = number of answer classes (>= 2).
double scaled_accuracy(double accuracy, int num_classes);

struct AccuracyCounts {
  std::int64_t correct_tokens = 0;
  std::int64_t scored_tokens = 0;       // targets that are not kIgnoreTarget
  std::int64_t correct_sequences = 0;   // every scored token right
  std::int64_t scored_sequences = 0;    // rows with at least one scored token

  double token_accuracy() const;
  double sequence_accuracy() const;
  AccuracyCounts& operator+=(const AccuracyCounts& other);
};

// Compares predictions with targets ([rows, columns], row-major), skipping
// kIgnoreTarget. In Format 1 each row has one scored token (the answer), so
// token accuracy is answer accuracy.
AccuracyCounts count_correct(const std::int32_t* predictions, const std::int32_t* targets,
                             std::int64_t rows, std::int64_t columns);

}  // namespace flashtrain::data

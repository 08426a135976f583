// Scores for the state-tracking tasks, on plain int32 buffers.
#pragma once

#include <cstdint>
#include <vector>

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

// Accuracy by sequence length: for each length L (tokens, answer included),
// the rows of L tokens with a scored target and those whose scored targets
// are all right. In Format 1 that is the answer; in Format 2 every position.
struct LengthCounts {
  std::vector<std::int64_t> correct;  // index: the length
  std::vector<std::int64_t> total;    // as long as `correct`

  // Adds field by field; the shorter of the two is first grown with zeros.
  LengthCounts& operator+=(const LengthCounts& other);
};

// count_correct by the row lengths `lengths` ([rows], each in [0, columns]);
// the result has columns + 1 entries (lengths 0 .. columns). Throws
// std::invalid_argument for a length outside [0, columns].
LengthCounts count_correct_by_length(const std::int32_t* predictions, const std::int32_t* targets,
                                     const std::int32_t* lengths, std::int64_t rows, std::int64_t columns);

}  // namespace flashtrain::data

// Missing duplicate (after Delétang et al. 2023): a bit string w (tokens 1 "0"
// and 2 "1") written twice, ww, with one of its 2n tokens hidden behind "_"
// (token 3); the answer is the hidden bit, which the other copy of w holds at
// the same offset. A sequence of length 2n + 1.
#include "task_definition.h"

namespace flashtrain::data::tasks {
namespace {

constexpr std::int32_t kBit0 = 1;
constexpr std::int32_t kBit1 = 2;
constexpr std::int32_t kHidden = 3;

Vocabulary vocabulary(const TaskOptions&) { return Vocabulary{{"<pad>", "0", "1", "_"}, 0, {kBit0, kBit1}}; }

Tokens draw_doubled(Rng& rng, int length, const TaskOptions&) {
  const std::size_t n = static_cast<std::size_t>((length - 1) / 2);
  Tokens t(2 * n);
  for (std::size_t i = 0; i < n; ++i) t[i] = t[i + n] = rng.below(2) == 0 ? kBit0 : kBit1;
  t[rng.below(2 * n)] = kHidden;
  return t;
}

std::int32_t hidden_bit(const Tokens& inputs, const TaskOptions&) {
  if (inputs.empty() || inputs.size() % 2 != 0)
    throw DataError("missing_duplicate: the inputs must be a doubled string (an even number of tokens, got " +
                    std::to_string(inputs.size()) + ")");
  const std::size_t n = inputs.size() / 2;
  std::size_t hidden = inputs.size();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] == kHidden) {
      if (hidden != inputs.size()) throw bad_token("missing_duplicate", inputs[i], i, "a bit: '_' appears twice");
      hidden = i;
    } else if (inputs[i] != kBit0 && inputs[i] != kBit1) {
      throw bad_token("missing_duplicate", inputs[i], i, "a bit (1 or 2) or '_' (3)");
    }
  }
  if (hidden == inputs.size()) throw DataError("missing_duplicate: no token is hidden ('_', token 3)");
  for (std::size_t i = 0; i < n; ++i) {
    if (i != hidden % n && inputs[i] != inputs[i + n])
      throw DataError("missing_duplicate: the halves differ at offset " + std::to_string(i) +
                      ": the inputs are not a doubled string");
  }
  return inputs[(hidden + n) % (2 * n)];
}

}  // namespace

const TaskDefinition& missing_duplicate_task() {
  static const TaskDefinition task{Task::kMissingDuplicate, "missing_duplicate", TaskFormat::kAnswerLast, 3, true,
                                   vocabulary, draw_doubled, hidden_bit, nullptr};
  return task;
}

}  // namespace flashtrain::data::tasks

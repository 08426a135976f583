// Parity and even pairs: bits as tokens 1 ("0") and 2 ("1"); the answer
// reuses the bit tokens.
#include "task_definition.h"

namespace flashtrain::data::tasks {
namespace {

constexpr std::int32_t kBit0 = 1;
constexpr std::int32_t kBit1 = 2;

Vocabulary bit_vocabulary(const TaskOptions&) {
  return Vocabulary{{"<pad>", "0", "1"}, 0, {kBit0, kBit1}};
}

Tokens draw_bits(Rng& rng, int length, const TaskOptions&) {
  Tokens bits(static_cast<std::size_t>(length - 1));
  for (auto& b : bits) b = rng.below(2) == 0 ? kBit0 : kBit1;
  return bits;
}

void check_bits(std::string_view task, const Tokens& inputs) {
  if (inputs.empty()) throw DataError(std::string(task) + ": no input bits");
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] != kBit0 && inputs[i] != kBit1) throw bad_token(task, inputs[i], i, "a bit (1 or 2)");
  }
}

// 1 + (number of 2s mod 2).
std::int32_t parity_answer(const Tokens& inputs, const TaskOptions&) {
  check_bits("parity", inputs);
  int ones = 0;
  for (const auto b : inputs) ones += b == kBit1;
  return ones % 2 == 0 ? kBit0 : kBit1;
}

// 1 if the first and last bit are equal, else 2.
std::int32_t even_pairs_answer(const Tokens& inputs, const TaskOptions&) {
  check_bits("even_pairs", inputs);
  return inputs.front() == inputs.back() ? kBit0 : kBit1;
}

}  // namespace

const TaskDefinition& parity_task() {
  static const TaskDefinition task{Task::kParity, "parity", TaskFormat::kAnswerLast, 2, false,
                                   bit_vocabulary, draw_bits, parity_answer, nullptr};
  return task;
}

const TaskDefinition& even_pairs_task() {
  static const TaskDefinition task{Task::kEvenPairs, "even_pairs", TaskFormat::kAnswerLast, 2, false,
                                   bit_vocabulary, draw_bits, even_pairs_answer, nullptr};
  return task;
}

}  // namespace flashtrain::data::tasks

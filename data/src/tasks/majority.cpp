// Majority and majority count (the xLSTM paper's definitions): symbols of an
// ordered alphabet of A tokens "1" .. "A" (token s is the symbol of value s;
// A = 63 by default: the paper's vocabulary of 64 with PAD). The answer is the
// most frequent symbol (majority) or its count written as the symbol of that
// value, min(count, A) (majority count: "if the count exceeds the vocab size,
// the highest vocab token"). Sequences with a tie for the top are redrawn, so
// every answer is unique.
#include <algorithm>

#include "task_definition.h"

namespace flashtrain::data::tasks {
namespace {

void check_alphabet(const TaskOptions& options) {
  if (options.majority_alphabet < 2 || options.majority_alphabet > kMaxMajorityAlphabet) {
    throw std::invalid_argument("majority: majority_alphabet must be in 2.." + std::to_string(kMaxMajorityAlphabet) +
                                ", got " + std::to_string(options.majority_alphabet));
  }
}

// Both tasks answer with a symbol: majority the most frequent one, majority
// count the one whose value is the count.
Vocabulary symbol_vocabulary(const TaskOptions& options) {
  check_alphabet(options);
  Vocabulary v{{"<pad>"}, 0, {}};
  for (int s = 1; s <= options.majority_alphabet; ++s) {
    v.names.push_back(std::to_string(s));
    v.classes.push_back(s);
  }
  return v;
}

struct Winner {
  std::int32_t symbol;
  int count;
  bool tie;
};

Winner count_symbols(std::string_view task, const Tokens& inputs, const TaskOptions& options) {
  check_alphabet(options);
  if (inputs.empty()) throw DataError(std::string(task) + ": no symbols");
  std::vector<int> counts(static_cast<std::size_t>(options.majority_alphabet) + 1, 0);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] < 1 || inputs[i] > options.majority_alphabet) {
      throw bad_token(task, inputs[i], i,
                      "a symbol (1.." + std::to_string(options.majority_alphabet) + ")");
    }
    ++counts[static_cast<std::size_t>(inputs[i])];
  }
  const auto top = std::max_element(counts.begin(), counts.end());
  return Winner{static_cast<std::int32_t>(top - counts.begin()), *top,
                std::count(counts.begin(), counts.end(), *top) > 1};
}

Tokens draw_symbols(Rng& rng, int length, const TaskOptions& options) {
  check_alphabet(options);
  Tokens t(static_cast<std::size_t>(length - 1));
  for (;;) {  // redraw ties; the stream continues, so this stays deterministic
    for (auto& s : t) s = 1 + static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(options.majority_alphabet)));
    if (!count_symbols("majority", t, options).tie) return t;
  }
}

std::int32_t majority_answer(const Tokens& inputs, const TaskOptions& options) {
  const Winner w = count_symbols("majority", inputs, options);
  if (w.tie) throw DataError("majority: the inputs have a tie for the most frequent symbol");
  return w.symbol;
}

std::int32_t majority_count_answer(const Tokens& inputs, const TaskOptions& options) {
  const Winner w = count_symbols("majority_count", inputs, options);
  if (w.tie) throw DataError("majority_count: the inputs have a tie for the most frequent symbol");
  return std::min(w.count, options.majority_alphabet);
}

}  // namespace

const TaskDefinition& majority_task() {
  static const TaskDefinition task{Task::kMajority, "majority", TaskFormat::kAnswerLast, 2, false,
                                   symbol_vocabulary, draw_symbols, majority_answer, nullptr};
  return task;
}

const TaskDefinition& majority_count_task() {
  static const TaskDefinition task{Task::kMajorityCount, "majority_count", TaskFormat::kAnswerLast,
                                   2, false, symbol_vocabulary, draw_symbols, majority_count_answer,
                                   nullptr};
  return task;
}

}  // namespace flashtrain::data::tasks

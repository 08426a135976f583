// Bucket sort (Format 3, after Delétang et al. 2023): n symbols of an alphabet
// of 5 ("a".."e", tokens 1..5), the separator "|" (token 6), then the same n
// symbols in sorted order, each one a target. A sequence of length 2n + 1.
#include <algorithm>

#include "task_definition.h"

namespace flashtrain::data::tasks {
namespace {

constexpr int kSymbols = 5;
constexpr std::int32_t kFirstSymbol = 1;
constexpr std::int32_t kSeparator = kFirstSymbol + kSymbols;

Vocabulary vocabulary(const TaskOptions&) {
  Vocabulary v{{"<pad>"}, 0, {}};
  for (int s = 0; s < kSymbols; ++s) {
    v.names.push_back(std::string(1, static_cast<char>('a' + s)));
    v.classes.push_back(kFirstSymbol + s);
  }
  v.names.push_back("|");
  return v;
}

// n = (length - 1) / 2 symbols and the separator.
Tokens draw_symbols(Rng& rng, int length, const TaskOptions&) {
  Tokens t(static_cast<std::size_t>((length - 1) / 2));
  for (auto& s : t) s = kFirstSymbol + static_cast<std::int32_t>(rng.below(kSymbols));
  t.push_back(kSeparator);
  return t;
}

Tokens sorted_symbols(const Tokens& inputs, const TaskOptions&) {
  if (inputs.empty() || inputs.back() != kSeparator)
    throw DataError("bucket_sort: the inputs must end with the separator '|' (token 6)");
  Tokens symbols(inputs.begin(), inputs.end() - 1);
  for (std::size_t i = 0; i < symbols.size(); ++i) {
    if (symbols[i] < kFirstSymbol || symbols[i] >= kSeparator)
      throw bad_token("bucket_sort", symbols[i], i, "a symbol (1..5)");
  }
  std::sort(symbols.begin(), symbols.end());
  return symbols;
}

}  // namespace

const TaskDefinition& bucket_sort_task() {
  static const TaskDefinition task{Task::kBucketSort, "bucket_sort", TaskFormat::kOutputTape, 3, true,
                                   vocabulary, draw_symbols, nullptr, nullptr, sorted_symbols};
  return task;
}

}  // namespace flashtrain::data::tasks

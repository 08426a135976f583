// A small deterministic English-like text for tokenizer and prepare tests:
// sentences of common words, numbers and punctuation, in paragraphs.
#pragma once

#include <cstdint>
#include <string>

#include "flashtrain/data/rng.h"

namespace flashtrain::data::testing {

inline std::string generated_sentence(Rng& rng) {
  static const char* const kWords[] = {
      "the", "of", "and", "to", "in", "is", "that", "it", "was", "for", "on", "are", "with",
      "as", "his", "they", "be", "at", "one", "have", "this", "from", "by", "hot", "word",
      "but", "what", "some", "we", "can", "out", "other", "were", "all", "there", "when",
      "up", "use", "your", "how", "said", "an", "each", "she", "which", "do", "their", "time",
      "if", "will", "way", "about", "many", "then", "them", "write", "would", "like", "so",
      "these", "her", "long", "make", "thing", "see", "him", "two", "has", "look", "more",
      "day", "could", "go", "come", "did", "number", "sound", "no", "most", "people", "my",
      "over", "know", "water", "than", "call", "first", "who", "may", "down", "side", "been",
      "now", "find", "river", "mountain", "library", "recurrent", "network", "state"};
  constexpr std::uint64_t kWordCount = sizeof(kWords) / sizeof(kWords[0]);
  std::string s;
  const int words = static_cast<int>(rng.between(4, 14));
  for (int w = 0; w < words; ++w) {
    if (w > 0) s += rng.below(12) == 0 ? ", " : " ";
    if (rng.below(15) == 0) {
      s += std::to_string(rng.below(2000));
    } else {
      std::string word = kWords[rng.below(kWordCount)];
      if (w == 0) word[0] = static_cast<char>(word[0] - 'a' + 'A');
      s += word;
    }
  }
  return s + (rng.below(6) == 0 ? "?" : ".");
}

// A document of `paragraphs` paragraphs, each one line, separated by blank lines.
inline std::string generated_document(std::uint64_t seed, int paragraphs) {
  Rng rng(derive_seed({seed}));
  std::string doc;
  for (int p = 0; p < paragraphs; ++p) {
    if (p > 0) doc += "\n\n";
    const int sentences = static_cast<int>(rng.between(1, 5));
    for (int s = 0; s < sentences; ++s) doc += (s > 0 ? " " : "") + generated_sentence(rng);
  }
  return doc + "\n";
}

}  // namespace flashtrain::data::testing

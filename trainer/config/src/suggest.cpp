#include "suggest.h"

#include <algorithm>
#include <cctype>

namespace flashtrain::config {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // d[i][j]: distance between the first i characters of a and the first j of b.
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t substitution = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + substitution});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

namespace {

std::string lowercase(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower;
}

}  // namespace

std::optional<std::string> closest_match(std::string_view typed,
                                         const std::vector<Candidate>& candidates) {
  const std::string typed_lower = lowercase(typed);
  const std::size_t limit = std::max<std::size_t>(2, typed.size() / 3);
  std::optional<std::string> best;
  std::size_t best_distance = limit + 1;
  for (const Candidate& candidate : candidates) {
    const std::size_t distance = edit_distance(typed_lower, lowercase(candidate.spelling));
    // Replacing every character is no typo ("ab" is not a misspelt "lr").
    const bool all_replaced = distance >= std::max(typed.size(), candidate.spelling.size());
    if (distance < best_distance && !all_replaced) {
      best_distance = distance;
      best = std::string(candidate.suggest);
    }
  }
  return best;
}

}  // namespace flashtrain::config

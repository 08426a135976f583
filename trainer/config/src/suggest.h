// "Did you mean ...?" for misspelt sections, keys and choices.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace flashtrain::config {

// Optimal-string-alignment distance: insertions, deletions, substitutions and
// swaps of two neighbouring characters each cost 1.
std::size_t edit_distance(std::string_view a, std::string_view b);

// A candidate the user probably meant by `typed`.
struct Candidate {
  std::string_view spelling;  // what is compared with the typed name
  std::string_view suggest;   // what is suggested (an alias suggests its key)
};

// The suggestion of the closest candidate, if it is close enough to be a
// typo: at most max(2, |typed| / 3) edits, ignoring case, and not every
// character replaced. Ties go to the earlier candidate.
std::optional<std::string> closest_match(std::string_view typed,
                                         const std::vector<Candidate>& candidates);

}  // namespace flashtrain::config

#include <algorithm>
#include <stdexcept>
#include <string>

#include "flashtrain/data/tasks.h"

namespace flashtrain::data {

std::int32_t Vocabulary::id(std::string_view name) const {
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<std::int32_t>(i);
  }
  throw std::invalid_argument("no token named '" + std::string(name) + "' in the vocabulary");
}

std::vector<std::int32_t> Vocabulary::ids(std::string_view spaced_names) const {
  std::vector<std::int32_t> out;
  std::size_t start = 0;
  while (start < spaced_names.size()) {
    const std::size_t end = std::min(spaced_names.find(' ', start), spaced_names.size());
    if (end > start) out.push_back(id(spaced_names.substr(start, end - start)));
    start = end + 1;
  }
  return out;
}

std::string Vocabulary::render(const std::vector<std::int32_t>& tokens, std::string_view separator) const {
  std::string out;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (i > 0) out += separator;
    const std::int32_t t = tokens[i];
    out += t >= 0 && t < size() ? names[static_cast<std::size_t>(t)] : "<" + std::to_string(t) + "?>";
  }
  return out;
}

}  // namespace flashtrain::data

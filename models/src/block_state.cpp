#include "flashtrain/models/block_state.h"

#include <ATen/ATen.h>

#include <sstream>

#include "flashtrain/models/errors.h"

namespace flashtrain::models {

const at::Tensor& state_entry(const BlockState& state, const std::string& key,
                              const std::vector<int64_t>& expected, std::string_view block) {
  const auto it = state.find(key);
  if (it == state.end() || !it->second.defined()) {
    throw InputError(std::string(block) + ": the state has no '" + key +
                     "'; start from initial_state()");
  }
  const at::Tensor& t = it->second;
  bool fits = t.dim() == int64_t(expected.size());
  for (size_t i = 0; fits && i < expected.size(); ++i)
    fits = expected[i] == -1 || expected[i] == t.size(int64_t(i));
  if (!fits) {
    std::ostringstream message;
    message << block << ": state '" << key << "' has shape " << t.sizes() << ", expected [";
    for (size_t i = 0; i < expected.size(); ++i)
      message << (i ? ", " : "")
              << (expected[i] == -1 ? std::string("*") : std::to_string(expected[i]));
    message << "]";
    throw InputError(message.str());
  }
  return t;
}

}  // namespace flashtrain::models

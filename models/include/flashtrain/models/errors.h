// The errors models throw. Both are std::invalid_argument, so a caller that
// only wants "bad input, no stack trace" catches that.
#pragma once

#include <stdexcept>

namespace flashtrain::models {

// Options that cannot build a model (a width that the heads do not divide, an
// unknown block kind); the message names the option and its value.
class OptionsError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A tensor or state handed to forward / forward_step that does not fit the
// model; the message names it, its shape and the expected one.
class InputError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

}  // namespace flashtrain::models

// Errors of the tuner. Every message names the thing that is wrong.
#pragma once

#include <stdexcept>

namespace flashrnn::tune {

// A problem that cannot be solved as stated: an unknown or duplicate variable, an
// empty or out-of-range domain, an expression that can overflow, an unset parameter.
class ProblemError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

}  // namespace flashrnn::tune

// The error every data component throws for bad files and bad input: the
// message names the problem precisely (file, offset, expected vs found).
#pragma once

#include <stdexcept>
#include <string>

namespace flashtrain::data {

class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace flashtrain::data

// Private: DataError messages for failed system calls.
#pragma once

#include <cerrno>
#include <cstring>
#include <string>

#include "flashtrain/data/error.h"

namespace flashtrain::data {

// "<what> '<path>': <strerror(errno)>"; call right after the failing call.
inline DataError system_error(const std::string& what, const std::string& path) {
  return DataError(what + " '" + path + "': " + std::strerror(errno));
}

}  // namespace flashtrain::data

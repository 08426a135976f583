#include "flashtrain/config/config.h"

#include "flashtrain/config/schema.h"

namespace flashtrain::config {

bool operator==(const Config& a, const Config& b) {
  for (const KeySpec& key : schema().keys())
    if (key.get(a) != key.get(b)) return false;
  return true;
}

}  // namespace flashtrain::config

#include <glob.h>

#include <algorithm>

#include "flashtrain/data/error.h"
#include "flashtrain/data/loader.h"

namespace flashtrain::data {

std::vector<std::string> find_shards(const std::string& pattern) {
  glob_t matches{};
  const int rc = ::glob(pattern.c_str(), 0, nullptr, &matches);
  std::vector<std::string> paths;
  if (rc == 0) paths.assign(matches.gl_pathv, matches.gl_pathv + matches.gl_pathc);
  ::globfree(&matches);
  if (rc == GLOB_NOMATCH || paths.empty()) throw DataError("no shard file matches '" + pattern + "'");
  if (rc != 0) throw DataError("cannot search for shards matching '" + pattern + "'");
  std::sort(paths.begin(), paths.end());  // glob sorts by locale; make it bytewise
  return paths;
}

}  // namespace flashtrain::data

#include "flashrnn/tune/refine.h"

#include <algorithm>

#include "flashrnn/tune/errors.h"
#include "flashrnn/tune/fused_select.h"

namespace flashrnn::tune {

RefineResult refine_fused_config(const DeviceProps& device, const FusedShape& shape,
                                 TuningCache& cache, const CandidateTimer& timer,
                                 const RefineOptions& options) {
  if (options.candidates < 1)
    throw ProblemError("refine_fused_config: candidates is " + std::to_string(options.candidates) +
                       "; it must be at least 1");
  RefineResult result;
  const CacheKey key = CacheKey::of(device, shape);
  if (const CachedChoice* cached = cache.find(key)) {
    // The class covers several batch sizes, and the model may have changed
    // since: the choice must still fit.
    if (auto config = fused_config_with(device, shape, cached->decisions)) {
      result.config = config;
      result.from_cache = true;
      result.time_ms = cached->time_ms;
      return result;
    }
  }

  const FusedRanking ranking = rank_fused_configs(device, shape);
  if (ranking.configs.empty()) {
    result.reason = ranking.reason;
    return result;
  }
  const size_t n = std::min<size_t>(size_t(options.candidates), ranking.configs.size());
  for (size_t i = 0; i < n; ++i) {
    const std::optional<double> ms = timer(ranking.configs[i].config);
    ++result.timed;
    // Ties keep the cost model's order.
    if (ms && (!result.time_ms || *ms < *result.time_ms)) {
      result.time_ms = ms;
      result.config = ranking.configs[i].config;
    }
  }
  if (!result.config) {
    result.config = ranking.configs.front().config;
    result.reason = "none of the " + std::to_string(n) +
                    " candidates could be timed; using the cost model's best, not cached";
    return result;
  }
  cache.put(key, CachedChoice{decisions_of(*result.config), *result.time_ms, int(n)});
  if (!cache.path().empty()) {
    try {
      cache.save();
    } catch (const std::exception& e) {
      result.warning = e.what();
    }
  }
  return result;
}

}  // namespace flashrnn::tune

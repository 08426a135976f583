// Timed refinement: the cost model ranks the configurations, a timer measures
// the best few on the GPU, the fastest is cached per (device, cell, shape
// class). The timer is the caller's (it needs the kernels and a GPU); tests
// pass a fake one.
//
//   TuningCache cache = TuningCache::load(TuningCache::default_path(), &warning);
//   RefineResult r = refine_fused_config(device, shape, cache, [&](const FusedConfig& c) {
//     return time_fused_kernel(c);  // ms per call, or std::nullopt if it cannot run
//   });
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "flashrnn/tune/device_props.h"
#include "flashrnn/tune/fused_config.h"
#include "flashrnn/tune/fused_shape.h"
#include "flashrnn/tune/tuning_cache.h"

namespace flashrnn::tune {

// Milliseconds per call of the kernel with this configuration, or nullopt when
// the configuration cannot run (say, the launch fails).
using CandidateTimer = std::function<std::optional<double>(const FusedConfig&)>;

struct RefineOptions {
  int candidates = 4;  // how many of the cost model's best to time
};

struct RefineResult {
  std::optional<FusedConfig> config;  // empty: nothing fits; use the alternating backend
  std::string reason;                 // why nothing fits, or why the choice is not timed
  bool from_cache = false;
  int timed = 0;                      // timer calls made by this call
  std::optional<double> time_ms;      // the choice's measured time (now or when cached)
  std::string warning;                // the cache could not be saved (the choice still holds)
};

// Uses the cached choice when there is one and it still fits this shape and
// device. Otherwise times the best `candidates` configurations, takes the
// fastest, puts it into `cache` and saves the cache when it has a path. When
// no candidate could be timed, returns the cost model's best uncached.
RefineResult refine_fused_config(const DeviceProps& device, const FusedShape& shape,
                                 TuningCache& cache, const CandidateTimer& timer,
                                 const RefineOptions& options = {});

}  // namespace flashrnn::tune

// Parameter counts of a language model by group, for the start-up report.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "flashtrain/models/language_model.h"

namespace flashtrain::models {

struct ParameterGroup {
  std::string name;
  int64_t count = 0;
};

// Every parameter in exactly one group, in this order: "embedding", one
// "<kind> mixers" group per block kind present (e.g. "lstm mixers"),
// "feed-forward", "norms", "head" (untied only). Empty groups are left out.
std::vector<ParameterGroup> count_parameters_by_group(const LanguageModelImpl& model);

// A table of the groups, then "total" and "total w/o embedding", e.g.
//   embedding              1,572,864
//   lstm mixers            28,311,552
//   ...
std::string format_parameter_counts(const std::vector<ParameterGroup>& groups);

}  // namespace flashtrain::models

// Groups of a language model's parameters: counts by group for the start-up
// report, and the split into weight-decayed and undecayed ones for AdamW.
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

// Whether AdamW's weight decay applies to the parameter called `name` (a key of
// named_parameters()): to matrices (projections, R, conv weights, an untied
// head), not to biases ("mixer.b", "conv.bias", "gate_bias"), norm weights or
// the embedding (tied or not). Decide by name, not by rank: the op's bias b is
// 3-dimensional.
bool takes_weight_decay(const std::string& name);

}  // namespace flashtrain::models

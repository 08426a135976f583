// The fused kernel's tiling model (models/fused_tiling.txt, built into the
// library) with its parameters set for one device and shape.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "flashrnn/tune/device_props.h"
#include "flashrnn/tune/fused_config.h"
#include "flashrnn/tune/fused_shape.h"
#include "flashrnn/tune/problem.h"
#include "flashrnn/tune/solver.h"

namespace flashrnn::tune {

// The text of models/fused_tiling.txt as it was when the library was built.
std::string_view fused_tiling_model_text();

// The variables that decide a layout; all others follow from them by
// propagation. A cached choice stores these.
const std::vector<std::string>& fused_decision_variables();

class FusedTilingModel {
 public:
  // Parses the model (the built-in one unless `text` is given) and sets its
  // parameters. Throws ProblemError (ParseError for bad text) when the model
  // lacks a parameter or variable the tuner uses.
  FusedTilingModel(const DeviceProps& device, const FusedShape& shape,
                   std::string_view text = fused_tiling_model_text());

  const Problem& problem() const { return problem_; }
  // Reads a solution of problem() into a configuration.
  FusedConfig config(const Assignment& solution) const;
  // Restricts the decision variables to these values, so that solving
  // says whether that layout fits this shape and device. False when a value lies
  // outside its declared domain: then no solution has it (and the model must not
  // be solved, some decisions are left unfixed).
  bool fix_decisions(const FusedDecisions& decisions);
  // Restricts one variable to one value ("what if ..."); false as above.
  bool fix(std::string_view variable, int64_t value);

 private:
  int at(std::string_view name) const { return problem_.index_of(name); }

  Problem problem_;
  std::vector<int> index_;  // per field read by config(), see fused_model.cpp
};

}  // namespace flashrnn::tune

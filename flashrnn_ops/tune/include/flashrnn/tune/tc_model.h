// The tensor-core kernels' tiling model (models/tc_tiling.txt, built into the
// library) with its parameters set for one device and shape.
#pragma once

#include <string_view>
#include <vector>

#include "flashrnn/tune/device_props.h"
#include "flashrnn/tune/fused_shape.h"
#include "flashrnn/tune/problem.h"
#include "flashrnn/tune/solver.h"
#include "flashrnn/tune/tc_config.h"

namespace flashrnn::tune {

// The text of models/tc_tiling.txt as it was when the library was built.
std::string_view tc_tiling_model_text();

// The fp32 values the forward saves per unit for the backward (cells/*.h kCache).
int cell_cache(Cell cell);

// What the kernels' tiling is solved for when they are compiled
// (tools/tc_tiling_table_main.cpp): a device with or without thread-block
// clusters and no other limit but its 1024 threads per block, so that the
// first solution is the tiling the kernels use on every device of that kind;
// whether a card has the registers and shared memory for it is decided at run
// time with its own limits.
DeviceProps tc_compile_target(bool clusters);

// One tiling the kernels are compiled with: the model's first solution on
// tc_compile_target(clusters) for a cell and compiled head dim.
struct CompiledTiling {
  Cell cell;
  int head_dim;
  bool clusters;
  TcConfig config;
};
// Every such tiling, with clusters then without, cell by cell (the cell
// list's order) and head dim by head dim (kTcHeadDims); a case with no
// solution has none. What the build writes into tc_tiling_table.h.
std::vector<CompiledTiling> solve_compiled_tilings();

class TcTilingModel {
 public:
  // Parses the model (the built-in one unless `text` is given) and binds every
  // parameter: the shape's, the device's, and the kernels' constants from
  // fused/tc_constants.h. Throws ParseError for bad text, and ProblemError where
  // the text and the bindings differ (a parameter with no binding or with a
  // value in the text, a binding of a name the text does not declare as a
  // parameter) or the model lacks a variable or constraint the tuner uses.
  TcTilingModel(const DeviceProps& device, const FusedShape& shape,
                std::string_view text = tc_tiling_model_text());

  const Problem& problem() const { return problem_; }
  // Reads a solution of problem() into a configuration.
  TcConfig config(const Assignment& solution) const;
  // Lifts the device's limits (limit_parameters()) and takes the head dim as
  // compiled, so that a solution says what the case would need (for
  // explanations): a split head's cluster on a device without clusters (the
  // tiling with clusters: max_cluster lifted means clusters), R's registers
  // above the kernels' cap of 128 (not where R is split between registers and
  // shared memory: split_r_regs stays). With `keep_device_clusters` the
  // device's max_cluster stays, and so does the tiling the kernels use on it:
  // the first solution's cluster is then the kernels' (tc_tiling.h),
  // whatever the other limits.
  void lift_limits(bool keep_device_clusters = false);
  // The parameters lift_limits() lifts: the device's registers, shared memory,
  // threads and cluster size, and the kernels' cap on R's registers (max_r_regs).
  static const std::vector<const char*>& limit_parameters();
  // Labels of the constraints that only derive the device's tiling rule
  // (whether it has clusters, the warps per CTA): a case cannot break them,
  // and a lifted solution satisfies them for the lifted device only.
  static const std::vector<const char*>& device_rule_labels();

 private:
  Problem problem_;
  int regs_per_thread_ = 0, regs_per_block_ = 0;
  std::vector<int> index_;  // per field read by config(), see tc_model.cpp
};

}  // namespace flashrnn::tune

#include "flashrnn/tune/tc_model.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "cell_types.h"
#include "flashrnn/tune/errors.h"
#include "flashrnn/tune/problem_parser.h"
#include "fused/tc_constants.h"

namespace flashrnn::tune {
namespace {

// The variables config() reads, in the order of index_.
enum Field {
  kRows, kCtaWarpCap, kCluster, kCtaDims, kDGroups, kWarps, kKSplit, kThreads, kBatchTiles, kCtas, kRRegs,
  kRRegKt, kRSharedKt, kRRegRegs, kBackward, kWorkingRegs, kFwSmem, kFwPrefetch, kFwSliceExchange, kFwSaveTiles,
  kBwSmem, kBwPrefetch, kBwStage, kBwThreads, kBwRRegs, kBwRegSlices, kBwSharedSlices, kBwSlice, kBwRing,
  kBwStreams, kBwOneStage, kBwStaticBytes, kFieldCount
};
constexpr const char* kFieldNames[kFieldCount] = {
    "rows", "cta_warp_cap", "cluster", "cta_dims", "d_groups", "warps", "k_split", "threads", "batch_tiles",
    "ctas", "r_regs", "r_reg_kt", "r_shared_kt", "r_reg_regs", "backward", "working_regs", "fw_smem",
    "fw_prefetch", "slice_exchange", "save_tiles", "bw_smem", "bw_prefetch", "bw_stage", "bw_threads", "bw_r_regs",
    "bw_reg_slices", "bw_shared_slices", "bw_slice", "bw_ring", "bw_streams", "bw_one_stage",
    "bw_static_bytes"};

// Far above any device: what a case needs when nothing limits it.
constexpr int64_t kUnlimited = int64_t(1) << 40;

struct Binding {
  const char* name;
  int64_t value;
};

// Gives every parameter of the model its value. The text declares each
// parameter without one and `bindings` are the only values, so a parameter
// the text declares and no binding names, one the text gives a value, and a
// binding of a name the text does not declare as a parameter are errors: the
// text and the code that binds it cannot drift apart.
void bind(Problem& problem, const std::vector<Binding>& bindings) {
  for (const Variable& v : problem.variables()) {
    if (!v.is_parameter) continue;
    const std::string where = "tc_tiling.txt:" + std::to_string(v.line) + ": parameter '" + v.name + "'";
    if (!v.domain.empty())
      throw ProblemError(where + " has a value in the text; tc_model.cpp binds every parameter");
    if (std::none_of(bindings.begin(), bindings.end(), [&](const Binding& b) { return v.name == b.name; }))
      throw ProblemError(where + " has no binding in tc_model.cpp");
  }
  for (const Binding& b : bindings) {
    const int i = problem.find(b.name);
    if (i < 0 || !problem.variables()[i].is_parameter)
      throw ProblemError(std::string("tc_model.cpp binds '") + b.name +
                         "', which tc_tiling.txt does not declare as a parameter");
    problem.set_parameter(b.name, b.value);
  }
}

}  // namespace

int cell_cache(Cell cell) {
  return with_cell(cell, [](auto c) { return decltype(c)::kCache; });
}

DeviceProps tc_compile_target(bool clusters) {
  DeviceProps d = device_fixture("h100");
  d.name = clusters ? "any device with clusters" : "any device without clusters";
  if (!clusters) d.compute_major = 8, d.compute_minor = 0, d.max_cluster_size = d.max_cluster_size_nonportable = 1;
  d.regs_per_sm = d.regs_per_block = d.regs_per_thread = 1 << 30;
  d.smem_per_sm = d.smem_per_block_optin = kUnlimited;
  return d;
}

std::vector<CompiledTiling> solve_compiled_tilings() {
  static constexpr Cell kCells[] = {
#define FLASHRNN_TUNE_CELL(CELL, ...) Cell::k##CELL,
      FLASHRNN_FOR_EACH_CELL(FLASHRNN_TUNE_CELL, _)
#undef FLASHRNN_TUNE_CELL
  };
  std::vector<CompiledTiling> tilings;
  for (bool clusters : {true, false}) {
    const DeviceProps target = tc_compile_target(clusters);
    for (Cell cell : kCells)
      for (int head_dim : fused::kTcHeadDims) {
        const TcTilingModel model(target, FusedShape{cell, 1, head_dim, fused::kTcRows, DType::kBf16});
        const SolveResult solved = solve_all(model.problem(), SolveOptions{1, 1u << 16});
        if (!solved.solutions.empty())
          tilings.push_back({cell, head_dim, clusters, model.config(solved.solutions.front())});
      }
  }
  return tilings;
}

TcTilingModel::TcTilingModel(const DeviceProps& device, const FusedShape& shape,
                             std::string_view text)
    : problem_(parse_problem(text, "tc_tiling.txt")),
      regs_per_thread_(device.regs_per_thread),
      regs_per_block_(device.regs_per_block) {
  validate(device);
  validate(shape);
  bind(problem_, {
      // The shape.
      {"gates", cell_gates(shape.cell)},
      {"states", cell_states(shape.cell)},
      {"cache", cell_cache(shape.cell)},
      {"heads", shape.heads},
      {"head_dim", shape.head_dim},
      {"batch", shape.batch},
      {"elem_bytes", dtype_bytes(shape.dtype)},
      // The device.
      {"regs_per_block", device.regs_per_block},
      {"regs_per_thread", device.regs_per_thread},
      {"smem_per_block", device.smem_per_block_optin},
      {"max_threads", device.max_threads_per_block},
      {"max_cluster", device.max_cluster_size_nonportable},
      // The kernels: the constants they are compiled with.
      {"rows", fused::kTcRows},
      {"max_cta_warps", fused::kTcMaxCtaWarps},
      {"split_cta_warps", fused::kTcSplitCtaWarps},
      {"wide_cta_warps", fused::kTcWideCtaWarps},
      {"cluster_cap", fused::kTcMaxCluster},
      {"max_r_regs", fused::kTcMaxRRegisters},
      {"split_r_regs", fused::kTcSplitRRegisters},
      {"max_bw_prefetch", fused::kTcMaxBackwardPrefetch},
      {"wide_bw_r_regs", fused::kTcWideBackwardRRegisters},
      {"max_ring", fused::kTcMaxRing},
      {"min_two_stage_ring", fused::kTcMinTwoStageRing},
      {"smem_budget", fused::kTcSmemBudget},
      {"bw_static_bytes", fused::kTcBackwardStaticBytes},
      {"head_dim_is_compiled", fused::tc_head_dim_compiled(shape.head_dim)},
  });
  for (const char* name : kFieldNames) index_.push_back(problem_.index_of(name));
  for (const char* label : device_rule_labels()) {
    const auto& cs = problem_.constraints();
    if (std::none_of(cs.begin(), cs.end(), [&](const Constraint& c) { return c.label == label; }))
      throw ProblemError(std::string("tc_tiling.txt: no constraint '") + label + "'");
  }
}

const std::vector<const char*>& TcTilingModel::limit_parameters() {
  static const std::vector<const char*> names = {"regs_per_block", "regs_per_thread",
                                                 "smem_per_block", "max_threads", "max_cluster",
                                                 "max_r_regs"};
  return names;
}

const std::vector<const char*>& TcTilingModel::device_rule_labels() {
  static const std::vector<const char*> labels = {"clusters_only_with", "clusters_if_any",
                                                  "cta_warp_cap_rule"};
  return labels;
}

void TcTilingModel::lift_limits(bool keep_device_clusters) {
  for (const char* name : limit_parameters())
    if (!keep_device_clusters || std::string_view(name) != "max_cluster")
      problem_.set_parameter(name, kUnlimited);
  regs_per_thread_ = regs_per_block_ = int(std::min<int64_t>(kUnlimited, 1 << 30));
  problem_.set_parameter("head_dim_is_compiled", 1);
}

TcConfig TcTilingModel::config(const Assignment& s) const {
  auto get = [&](Field f) { return s.at(index_[f]); };
  TcConfig c;
  c.rows = int(get(kRows));
  c.cta_warp_cap = int(get(kCtaWarpCap));
  c.cluster = int(get(kCluster));
  c.cta_dims = int(get(kCtaDims));
  c.d_groups_per_warp = int(get(kDGroups));
  c.warps = int(get(kWarps));
  c.k_split = int(get(kKSplit));
  c.threads = int(get(kThreads));
  c.batch_tiles = int(get(kBatchTiles));
  c.ctas = get(kCtas);
  c.r_registers_per_thread = int(get(kRRegs));
  c.r_register_ktiles = int(get(kRRegKt));
  c.r_shared_ktiles = int(get(kRSharedKt));
  c.r_forward_registers = int(get(kRRegRegs));
  c.backward = get(kBackward) != 0;
  c.backward_threads = int(get(kBwThreads));
  c.backward_r_registers = int(get(kBwRRegs));
  c.backward_register_slices = int(get(kBwRegSlices));
  c.backward_shared_slices = int(get(kBwSharedSlices));
  c.backward_slice_bytes = get(kBwSlice);
  c.backward_ring_slots = int(get(kBwRing));
  c.backward_streams = get(kBwStreams) != 0;
  c.backward_one_stage = get(kBwOneStage) != 0;
  c.working_registers = int(get(kWorkingRegs));
  // __launch_bounds__(threads): the compiler keeps threads · registers within a
  // block's registers, allocated in granules of 8 per thread.
  c.register_cap = std::min(regs_per_thread_, regs_per_block_ / c.threads / 8 * 8);
  c.forward_smem_bytes = get(kFwSmem);
  c.forward_prefetch = int(get(kFwPrefetch));
  c.forward_slice_exchange = get(kFwSliceExchange) != 0;
  c.forward_save_tiles = get(kFwSaveTiles) != 0;
  c.backward_smem_bytes = get(kBwSmem);
  c.backward_static_smem_bytes = get(kBwStaticBytes);
  c.backward_prefetch = int(get(kBwPrefetch));
  c.backward_stages = c.backward_prefetch + 1;
  c.backward_stage_bytes = get(kBwStage);
  return c;
}

}  // namespace flashrnn::tune

#include "flashrnn/tune/tc_select.h"

#include <algorithm>
#include <iterator>
#include <sstream>
#include <string>
#include <utility>

#include "flashrnn/tune/tc_model.h"
#include "fused/tc_constants.h"

namespace flashrnn::tune {
namespace {

// "512 KiB", "4.5 MiB", "1000 B".
std::string kib(int64_t bytes) {
  std::ostringstream s;
  if (bytes >= (int64_t(1) << 20) && bytes % (int64_t(1) << 19) == 0)
    s << double(bytes) / double(int64_t(1) << 20) << " MiB";
  else if (bytes % 1024 == 0)
    s << bytes / 1024 << " KiB";
  else
    s << bytes << " B";
  return s.str();
}

// The value of one of the model's parameters.
int64_t parameter(const Problem& model, const char* name) {
  return model.variables()[model.index_of(name)].domain.min();
}

// "16, 32, 48, ..., 768": the head dims the kernels are compiled for.
std::string compiled_head_dims() {
  std::ostringstream s;
  const char* separator = "";
  for (int d : fused::kTcHeadDims) s << std::exchange(separator, ", ") << d;
  return s.str();
}

// The constraints that fix the CTAs per head and the warps (tc_tiling.txt):
// with bf16/fp16 and a multiple of 16, one of them fails exactly when no
// cluster splits the head (with clusters: the lifted model's tiling).
bool is_split_label(const std::string& label) {
  static const char* const kLabels[] = {"cluster_cap_fit", "head_warp_dims", "split_warps",
                                        "split_even",      "head_split",     "warp_dims"};
  return std::find(std::begin(kLabels), std::end(kLabels), label) != std::end(kLabels);
}

bool is_device_rule_label(const std::string& label) {
  const auto& labels = TcTilingModel::device_rule_labels();
  return std::find(labels.begin(), labels.end(), label) != labels.end();
}

// The binding constraint in words, with the shape's and the device's numbers.
// `needs` is the case's configuration with no device limit (when it has one);
// `real` the model with the device's parameters.
std::string words(const std::string& label, const Problem& real, const DeviceProps& d,
                  const FusedShape& s, const std::optional<TcConfig>& needs,
                  const std::string& fallback) {
  const int g = cell_gates(s.cell), e = dtype_bytes(s.dtype);
  const int groups = g % 2 == 0 ? 1 : 2;  // d_groups: groups of 8 head dims per warp
  std::ostringstream w;
  if (label == "tensor_core_storage") {
    w << "the tensor-core kernels take bfloat16 and float16 (mma.sync m16n8k16), not "
      << to_string(s.dtype);
  } else if (label == "head_dim_mma" || (is_split_label(label) && s.head_dim % 16 != 0)) {
    w << "head dim " << s.head_dim << " is not a multiple of 16 (the MMA's k)";
  } else if (is_split_label(label)) {
    // Only the lifted model (max_cluster lifted: the tiling with clusters)
    // fails so: with a solution there, the binding limit is another. Its cap
    // of a CTA's warps is tc_cta_warp_cap(gates, D, true).
    const int head_warps = s.head_dim / (8 * groups);
    const int64_t cap = g % 2 != 0 ? parameter(real, "max_cta_warps")
                        : head_warps <= parameter(real, "split_cta_warps") * parameter(real, "cluster_cap")
                            ? parameter(real, "split_cta_warps")
                            : parameter(real, "wide_cta_warps");
    w << "head dim " << s.head_dim << " has no cluster split: its " << s.head_dim << " / "
      << 8 * groups << " = " << s.head_dim / (8 * groups)
      << " warps do not divide evenly into at most " << parameter(real, "cluster_cap") << " CTAs of at most " << cap
      << " warps each";
    if (!d.has_clusters())
      w << " (sm_90's clusters; this device has none, and one CTA takes at most "
        << parameter(real, "max_cta_warps") << " warps)";
  } else if (label == "cluster_fits" && needs) {
    w << "head dim " << s.head_dim << " needs a thread-block cluster of " << needs->cluster
      << " CTAs (sm_90); ";
    if (d.max_cluster_size_nonportable <= 1)
      w << "this device has none";
    else
      w << "this device's take at most " << d.max_cluster_size_nonportable;
  } else if (label == "r_regs_cap") {
    // kRRegisters: the same for every cluster, so it needs no solution.
    w << "R takes " << g * groups * s.head_dim / 8 << " registers per thread (" << g
      << (g == 1 ? " gate · " : " gates · ") << groups << (groups == 1 ? " group · " : " groups · ")
      << s.head_dim << " / 8) > " << parameter(real, "max_r_regs")
      << " (an odd gate count keeps R in registers)";
  } else if (label == "head_dim_compiled") {
    w << "head dim " << s.head_dim << " is not compiled (the tensor-core kernels have "
      << compiled_head_dims() << ")";
  } else if (label == "threads_fit" && needs) {
    w << "threads 32·"
      << (needs->cluster > 1 ? "(D/" + std::to_string(needs->cluster) + ")" : std::string("D"))
      << "/(8·G_w) = 32·"
      << needs->cta_dims << "/" << 8 * needs->d_groups_per_warp << " = " << needs->threads << " > "
      << d.max_threads_per_block << " per block (a CTA holds its dims' rows of R in its registers)";
  } else if ((label == "r_regs_per_sm" || label == "regs_per_sm_fit") && needs &&
             int64_t(needs->r_registers_per_thread) * needs->threads > d.regs_per_block) {
    const int64_t dims = needs->cta_dims;
    if (needs->cluster > 1)
      w << "R's rows of one of the cluster's " << needs->cluster << " CTAs need ";
    else
      w << "R of one head needs ";
    w << g << "·" << dims << "·" << s.head_dim << "·" << e << " B = "
      << kib(int64_t(g) * dims * s.head_dim * e) << " of registers; one SM has "
      << kib(4 * int64_t(d.regs_per_block));
  } else if (label == "regs_per_thread_fit" && needs) {
    w << "registers per thread: R " << needs->r_registers_per_thread << " + at least "
      << needs->working_registers << " working = "
      << needs->r_registers_per_thread + needs->working_registers << " > " << d.regs_per_thread;
  } else if (label == "regs_per_sm_fit" && needs) {
    w << "registers per block: (R " << needs->r_registers_per_thread << " + at least "
      << needs->working_registers << " working) x " << needs->threads << " threads = "
      << int64_t(needs->r_registers_per_thread + needs->working_registers) * needs->threads
      << " > " << d.regs_per_block;
  } else if (label == "fw_smem_fits" && needs) {
    w << "shared memory: the forward needs " << needs->forward_smem_bytes << " B > the device's "
      << d.smem_per_block_optin << " B per block";
  } else if (label == "bw_smem_fits" && needs) {
    w << "shared memory: the backward needs " << needs->backward_smem_bytes << " B ("
      << needs->backward_stages << (needs->backward_stages == 1 ? " stage of " : " stages of ")
      << needs->backward_stage_bytes << " B + two delta tiles"
      << (needs->backward_ring_slots > 0 ? " + " + std::to_string(needs->backward_ring_slots) +
                                               " slices of Rᵀ of " +
                                               std::to_string(needs->backward_slice_bytes) + " B"
                                         : std::string())
      << ") > the device's " << d.smem_per_block_optin << " B per block";
  } else {
    w << fallback;
  }
  return w.str();
}

// The labels of the constraints `needs_values` (a solution of the model with
// the limits lifted) breaks on the real device: the model's constraints
// evaluated with the real model's parameters put back.
std::vector<std::string> broken_labels(const Problem& real, Assignment values) {
  std::vector<std::string> labels;
  for (size_t i = 0; i < real.variables().size(); ++i)
    if (real.variables()[i].is_parameter) values[i] = real.variables()[i].domain.min();
  for (const Constraint& c : real.constraints()) {
    if (is_device_rule_label(c.label)) continue;  // the lifted device's rule, not a limit
    if (!holds(c, values) && !c.label.empty()) labels.push_back(c.label);
  }
  return labels;
}

}  // namespace

TcSelection select_tc_config(const DeviceProps& device, const FusedShape& shape) {
  const TcTilingModel model(device, shape);
  // The first solution in search order: `cluster` first, fewest first, so the
  // fewest CTAs that split the head within the device's limits.
  const SolveResult solved = solve_all(model.problem(), SolveOptions{1, 1u << 16});
  TcSelection selection;
  // The kernels use the fewest CTAs that split the head on this device whatever
  // its other limits (tc_tiling.h): the first solution of the model with
  // every limit but the device's clusters lifted. A larger cluster that merely
  // fits where the fewest does not is not compiled; and where the case does
  // not run, this is what the kernels' tiling on this device would need.
  std::optional<TcConfig> tiling;
  std::optional<Assignment> tiling_values;
  auto solve_tiling = [&] {
    TcTilingModel kernels(device, shape);
    kernels.lift_limits(/*keep_device_clusters=*/true);
    const SolveResult r = solve_all(kernels.problem(), SolveOptions{1, 1u << 16});
    if (!r.solutions.empty()) {
      tiling_values = r.solutions.front();
      tiling = kernels.config(*tiling_values);
    }
  };
  if (!solved.solutions.empty()) {
    const TcConfig config = model.config(solved.solutions.front());
    // One CTA is the fewest there is; a split head is checked against the tiling.
    if (config.cluster > 1) solve_tiling();
    if (config.cluster == 1 || !tiling || tiling->cluster == config.cluster) {
      selection.config = config;
      return selection;
    }
  } else {
    solve_tiling();
  }
  std::vector<std::string> labels;
  if (tiling) {
    selection.needs = tiling;
    labels = broken_labels(model.problem(), *tiling_values);
  }
  // No tiling on this device (a head of more than 8 warps without clusters, or
  // no split at all): what a device with clusters would need, the model with
  // every limit lifted, max_cluster too.
  TcTilingModel lifted(device, shape);
  lifted.lift_limits();
  SolveResult unlimited;
  if (!tiling) {
    unlimited = solve_all(lifted.problem(), SolveOptions{1, 1u << 16});
    if (!unlimited.solutions.empty()) {
      selection.needs = lifted.config(unlimited.solutions.front());
      labels = broken_labels(model.problem(), unlimited.solutions.front());
    }
  }
  // The binding constraint: the first device limit or kernel cap (in the
  // model's order) the case breaks; where no limit is to blame (the storage
  // type, a head dim that is no multiple of 16 or that no cluster splits), the
  // solver's conflict with the limits lifted (the same constraints, indexed alike).
  std::string fallback = "no solution";
  const bool lifted_conflict = !selection.needs && unlimited.conflict;
  const Problem& conflicting = lifted_conflict ? lifted.problem() : model.problem();
  const std::optional<Conflict>& conflict = lifted_conflict ? unlimited.conflict : solved.conflict;
  if (conflict) {
    fallback = explain(conflicting, *conflict);
    if (conflict->constraint >= 0)
      selection.binding = conflicting.constraints()[conflict->constraint].label;
  }
  if (!labels.empty()) selection.binding = labels.front();
  const Problem& real = model.problem();
  selection.reason = words(selection.binding, real, device, shape, selection.needs, fallback);
  selection.broken.push_back(selection.reason);
  // No tiling at all (no solution to evaluate the limits with): the kernels'
  // caps that need none, where the storage type and the head dim's 16 are right.
  if (!selection.needs && dtype_bytes(shape.dtype) == 2 && shape.head_dim % 16 == 0) {
    const int g = cell_gates(shape.cell), groups = g % 2 == 0 ? 1 : 2;
    if (g * groups * shape.head_dim / 8 > parameter(real, "max_r_regs") && groups == 2)  // an even count splits R
      labels.push_back("r_regs_cap");
    if (parameter(real, "head_dim_is_compiled") == 0) labels.push_back("head_dim_compiled");
  }
  for (const std::string& label : labels) {
    const std::string w = words(label, real, device, shape, selection.needs, label);
    if (std::find(selection.broken.begin(), selection.broken.end(), w) == selection.broken.end())
      selection.broken.push_back(w);
  }
  return selection;
}

TcSelection select_tc_config(const DeviceProps& device, Cell cell, int head_dim, int batch,
                             DType dtype) {
  return select_tc_config(device, FusedShape{cell, 1, head_dim, batch, dtype});
}

}  // namespace flashrnn::tune

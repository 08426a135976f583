#include "flashrnn/tune/tc_select.h"

#include <algorithm>
#include <sstream>

#include "flashrnn/tune/tc_model.h"

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

// The binding constraint in words, with the shape's and the device's numbers.
// `needs` is the case's configuration with no device limit (when it has one).
std::string words(const std::string& label, const DeviceProps& d, const FusedShape& s,
                  const std::optional<TcConfig>& needs, const std::string& fallback) {
  const int g = cell_gates(s.cell), e = dtype_bytes(s.dtype);
  std::ostringstream w;
  if (label == "tensor_core_storage") {
    w << "the tensor-core kernels take bfloat16 and float16 (mma.sync m16n8k16), not "
      << to_string(s.dtype);
  } else if (label == "head_dim_mma" || label == "warp_dims") {
    w << "head dim " << s.head_dim << " is not a multiple of 16 (the MMA's k)";
  } else if (label == "head_dim_compiled") {
    w << "head dim " << s.head_dim
      << " is not compiled (the tensor-core kernels have 16, 32, 64, 128)";
  } else if (label == "threads_fit" && needs) {
    w << "threads 32·D/(8·G_w) = 32·" << s.head_dim << "/" << 8 * needs->d_groups_per_warp << " = "
      << needs->threads << " > " << d.max_threads_per_block
      << " per block (a CTA holds one head's R in its registers)";
  } else if ((label == "r_regs_per_sm" || label == "regs_per_sm_fit") && needs &&
             int64_t(needs->r_registers_per_thread) * needs->threads > d.regs_per_block) {
    w << "R of one head needs " << g << "·" << s.head_dim << "·" << s.head_dim << "·" << e
      << " B = " << kib(int64_t(g) * s.head_dim * s.head_dim * e) << " of registers; one SM has "
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
      << needs->backward_stages << " stages of " << needs->backward_stage_bytes
      << " B + two delta tiles) > the device's " << d.smem_per_block_optin << " B per block";
  } else {
    w << fallback;
  }
  return w.str();
}

// The labels of the constraints `needs_values` (a solution of the model with
// the limits lifted) breaks on the real device: the model's constraints
// evaluated with the device's parameters put back.
std::vector<std::string> broken_labels(const Problem& real, Assignment values) {
  std::vector<std::string> labels;
  for (const char* name : {"regs_per_block", "regs_per_thread", "smem_per_block", "max_threads"})
    values[real.index_of(name)] = real.variables()[real.index_of(name)].domain.min();
  const int compiled = real.index_of("compiled_head_dim");
  const int64_t head_dim = values[real.index_of("head_dim")];
  for (size_t i = 0; i < real.constraints().size(); ++i) {
    const Constraint& c = real.constraints()[i];
    const bool ok = c.label == "head_dim_compiled"
                        ? real.variables()[compiled].domain.contains(head_dim)
                        : holds(c, values);
    if (!ok && !c.label.empty()) labels.push_back(c.label);
  }
  return labels;
}

}  // namespace

TcSelection select_tc_config(const DeviceProps& device, const FusedShape& shape) {
  const TcTilingModel model(device, shape);
  const SolveResult solved = solve_all(model.problem(), SolveOptions{2, 1u << 16});
  TcSelection selection;
  if (!solved.solutions.empty()) {
    selection.config = model.config(solved.solutions.front());
    return selection;
  }
  TcTilingModel lifted(device, shape);
  lifted.lift_limits();
  const SolveResult unlimited = solve_all(lifted.problem(), SolveOptions{1, 1u << 16});
  std::vector<std::string> labels;
  if (!unlimited.solutions.empty()) {
    selection.needs = lifted.config(unlimited.solutions.front());
    labels = broken_labels(model.problem(), unlimited.solutions.front());
  }
  std::string fallback = "no solution";
  if (solved.conflict) {
    fallback = explain(model.problem(), *solved.conflict);
    if (solved.conflict->constraint >= 0)
      selection.binding = model.problem().constraints()[solved.conflict->constraint].label;
  }
  // The binding constraint: the first device limit (in the model's order) the
  // case breaks; the solver's conflict where no limit is to blame (the storage
  // type, a head dim that is no multiple of 16).
  if (!labels.empty()) selection.binding = labels.front();
  selection.reason = words(selection.binding, device, shape, selection.needs, fallback);
  selection.broken.push_back(selection.reason);
  for (const std::string& label : labels) {
    const std::string w = words(label, device, shape, selection.needs, label);
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

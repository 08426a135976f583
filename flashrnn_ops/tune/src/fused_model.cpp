#include "flashrnn/tune/fused_model.h"

#include "flashrnn/tune/errors.h"
#include "flashrnn/tune/problem_parser.h"

namespace flashrnn::tune {
namespace {

// The variables config() reads, in the order of index_.
enum Field {
  kCtasPerHead, kUseCluster, kUseGrid, kHeadsPerCta, kBatchTile, kBatchTiles, kCtas,
  kUnitsPerCta, kUnitsPerWarp, kKSplit, kWarps, kThreads, kKSlice, kKReg, kKSmem,
  kRegsNeeded, kRegsAlloc, kSmemR, kSmemH, kSmemWx, kSmemReduce, kSmemBytes, kFieldCount
};
constexpr const char* kFieldNames[kFieldCount] = {
    "ctas_per_head", "use_cluster", "use_grid", "heads_per_cta", "batch_tile", "batch_tiles",
    "ctas", "units_per_cta", "units_per_warp", "k_split", "warps", "threads", "k_slice",
    "k_reg", "k_smem", "regs_needed", "regs_alloc", "smem_r", "smem_h", "smem_wx",
    "smem_reduce", "smem_bytes"};

}  // namespace

const std::vector<std::string>& fused_decision_variables() {
  static const std::vector<std::string> names = {
      "ctas_per_head", "use_cluster", "use_grid", "heads_per_cta",
      "batch_tile",    "k_split",     "units_per_warp", "k_reg"};
  return names;
}

FusedTilingModel::FusedTilingModel(const DeviceProps& device, const FusedShape& shape,
                                   std::string_view text)
    : problem_(parse_problem(text, "fused_tiling.txt")) {
  validate(device);
  validate(shape);
  const std::pair<const char*, int64_t> parameters[] = {
      {"gates", cell_gates(shape.cell)},
      {"states", cell_states(shape.cell)},
      {"heads", shape.heads},
      {"head_dim", shape.head_dim},
      {"batch", shape.batch},
      {"elem_bytes", dtype_bytes(shape.dtype)},
      {"sm_count", device.sm_count},
      {"regs_per_block", device.regs_per_block},
      {"regs_per_thread", device.regs_per_thread},
      {"smem_per_block", device.smem_per_block_optin},
      {"max_threads", device.max_threads_per_block},
      {"max_cluster", device.max_cluster_size_nonportable},
  };
  for (const auto& [name, value] : parameters) problem_.set_parameter(name, value);
  for (const char* name : kFieldNames) index_.push_back(at(name));
  for (const std::string& name : fused_decision_variables()) at(name);
}

FusedConfig FusedTilingModel::config(const Assignment& s) const {
  auto get = [&](Field f) { return s.at(index_[f]); };
  FusedConfig c;
  c.ctas_per_head = int(get(kCtasPerHead));
  c.exchange = get(kUseCluster) ? HeadExchange::kCluster
               : get(kUseGrid)  ? HeadExchange::kGrid
                                : HeadExchange::kNone;
  c.heads_per_cta = int(get(kHeadsPerCta));
  c.batch_tile = int(get(kBatchTile));
  c.batch_tiles = int(get(kBatchTiles));
  c.ctas = int(get(kCtas));
  c.units_per_cta = int(get(kUnitsPerCta));
  c.units_per_warp = int(get(kUnitsPerWarp));
  c.k_split = int(get(kKSplit));
  c.warps = int(get(kWarps));
  c.threads = int(get(kThreads));
  c.k_slice = int(get(kKSlice));
  c.k_reg = int(get(kKReg));
  c.k_smem = int(get(kKSmem));
  c.regs_needed = int(get(kRegsNeeded));
  c.regs_alloc = int(get(kRegsAlloc));
  c.smem_r = get(kSmemR);
  c.smem_h = get(kSmemH);
  c.smem_wx = get(kSmemWx);
  c.smem_reduce = get(kSmemReduce);
  c.smem_bytes = get(kSmemBytes);
  return c;
}

bool FusedTilingModel::fix(std::string_view variable, int64_t value) {
  const int i = at(variable);
  if (!problem_.variables()[i].domain.contains(value)) return false;
  problem_.set_domain(i, Domain::single(value));
  return true;
}

bool FusedTilingModel::fix_decisions(const FusedDecisions& d) {
  return fix("ctas_per_head", d.ctas_per_head) &&
         fix("use_cluster", d.exchange == HeadExchange::kCluster) &&
         fix("use_grid", d.exchange == HeadExchange::kGrid) &&
         fix("heads_per_cta", d.heads_per_cta) && fix("batch_tile", d.batch_tile) &&
         fix("k_split", d.k_split) && fix("units_per_warp", d.units_per_warp) &&
         fix("k_reg", d.k_reg);
}

}  // namespace flashrnn::tune

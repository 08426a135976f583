#include "flashrnn/tune/fused_explain.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>

#include "flashrnn/tune/fused_model.h"
#include "flashrnn/tune/solver.h"

namespace flashrnn::tune {
namespace {

// A decision's value in a configuration (the names of fused_decision_variables()).
int64_t decision_value(const FusedConfig& c, const std::string& name) {
  if (name == "ctas_per_head") return c.ctas_per_head;
  if (name == "use_cluster") return c.exchange == HeadExchange::kCluster;
  if (name == "use_grid") return c.exchange == HeadExchange::kGrid;
  if (name == "heads_per_cta") return c.heads_per_cta;
  if (name == "batch_tile") return c.batch_tile;
  if (name == "k_split") return c.k_split;
  if (name == "units_per_warp") return c.units_per_warp;
  if (name == "k_reg") return c.k_reg;
  return -1;
}

std::string percent(double part, double whole) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f%%", whole > 0 ? 100.0 * part / whole : 0.0);
  return text;
}

std::string resources(const DeviceProps& device, const FusedConfig& c) {
  std::ostringstream s;
  const int64_t block_regs = int64_t(c.regs_alloc) * c.threads;
  s << "  resources of one CTA (one per SM):\n"
    << "    threads            " << c.threads << " of " << device.max_threads_per_block << "\n"
    << "    registers/thread   " << c.regs_alloc << " (estimated need " << c.regs_needed
    << ") of " << device.regs_per_thread << "\n"
    << "    registers/block    " << block_regs << " of " << device.regs_per_block << " ("
    << percent(double(block_regs), device.regs_per_block) << ")\n"
    << "    shared memory      " << c.smem_bytes << " of " << device.smem_per_block_optin << " B ("
    << percent(double(c.smem_bytes), double(device.smem_per_block_optin)) << "): R " << c.smem_r
    << ", h " << c.smem_h << ", Wx " << c.smem_wx << ", partial sums " << c.smem_reduce << "\n"
    << "    CTAs               " << c.ctas << " on " << device.sm_count << " SMs";
  if (c.exchange == HeadExchange::kCluster)
    s << ", clusters of " << c.ctas_per_head
      << (c.ctas_per_head > device.max_cluster_size ? " (non-portable size: needs the opt-in)"
                                                      : "");
  s << "\n";
  return s.str();
}

// The values of one decision worth showing: every other value of a small
// domain; of a large one, the smallest and the feasible neighbours of the choice.
std::vector<int64_t> alternatives(const Domain& declared, int64_t chosen,
                                  const std::set<int64_t>& feasible) {
  std::set<int64_t> values;
  if (declared.size() <= 8) {
    for (uint64_t i = 0; i < declared.size(); ++i) values.insert(declared.value_at(i));
  } else {
    values.insert(declared.min());
    auto above = feasible.upper_bound(chosen);
    if (above != feasible.end()) values.insert(*above);
    auto at = feasible.lower_bound(chosen);
    if (at != feasible.begin()) values.insert(*std::prev(at));
  }
  values.erase(chosen);
  return {values.begin(), values.end()};
}

}  // namespace

std::string explain_fused_choice(const DeviceProps& device, const FusedShape& shape,
                                 const FusedRanking& ranking, std::string_view model_text) {
  std::ostringstream s;
  char line[160];
  std::snprintf(line, sizeof line, "%zu feasible configurations, solved in %.2f ms",
                ranking.configs.size(), ranking.solve_seconds * 1e3);
  s << "fused " << describe(shape) << " on " << device.name << ": " << line << "\n";
  if (ranking.configs.empty()) {
    s << ranking.reason << "\n-> the op falls back to the alternating backend\n";
    return s.str();
  }
  const RankedConfig& best = ranking.configs.front();
  std::snprintf(line, sizeof line, "%.2f ms", best.cost.step_ns * 1024 * 1e-6);
  s << "chosen: " << describe(best.config) << "\n"
    << "  estimated " << describe(best.cost) << "; T = 1024: " << line << "\n"
    << resources(device, best.config);

  const std::string_view text = model_text.empty() ? fused_tiling_model_text() : model_text;
  const FusedTilingModel base(device, shape, text);
  s << "  each decision changed (the best configuration with that value, or what rules it out):\n";
  for (const std::string& name : fused_decision_variables()) {
    const int64_t chosen = decision_value(best.config, name);
    std::set<int64_t> feasible;
    for (const RankedConfig& r : ranking.configs) feasible.insert(decision_value(r.config, name));
    const Domain& declared = base.problem().variables()[base.problem().index_of(name)].domain;
    for (int64_t value : alternatives(declared, chosen, feasible)) {
      s << "    " << name << " = " << value << " (chosen " << chosen << "): ";
      auto it = std::find_if(ranking.configs.begin(), ranking.configs.end(),
                             [&](const RankedConfig& r) {
                               return decision_value(r.config, name) == value;
                             });
      if (it != ranking.configs.end()) {
        std::snprintf(line, sizeof line, "at best %.3f us/step, %+.0f%%", it->cost.step_ns * 1e-3,
                      100.0 * (it->cost.step_cycles / best.cost.step_cycles - 1));
        s << line << "\n";
        continue;
      }
      FusedTilingModel what_if(device, shape, text);
      what_if.fix(name, value);
      const SolveResult r = solve_all(what_if.problem(), SolveOptions{1, 1u << 20});
      s << "infeasible: " << (r.conflict ? explain(what_if.problem(), *r.conflict) : "search limit")
        << "\n";
    }
  }
  return s.str();
}

}  // namespace flashrnn::tune

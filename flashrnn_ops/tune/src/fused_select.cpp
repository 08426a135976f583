#include "flashrnn/tune/fused_select.h"

#include <algorithm>

#include "flashrnn/tune/fused_model.h"
#include "flashrnn/tune/solver.h"

namespace flashrnn::tune {

FusedRanking rank_fused_configs(const DeviceProps& device, const FusedShape& shape,
                                std::string_view model_text) {
  const FusedTilingModel model(device, shape,
                               model_text.empty() ? fused_tiling_model_text() : model_text);
  const SolveResult solved = solve_all(model.problem());
  FusedRanking ranking;
  ranking.solve_seconds = solved.stats.seconds;
  for (const Assignment& s : solved.solutions) {
    const FusedConfig config = model.config(s);
    ranking.configs.push_back({config, estimate_fused_cost(device, shape, config)});
  }
  std::stable_sort(ranking.configs.begin(), ranking.configs.end(),
                   [](const RankedConfig& a, const RankedConfig& b) {
                     return a.cost.step_cycles < b.cost.step_cycles;
                   });
  if (ranking.configs.empty())
    ranking.reason = "no fused configuration fits " + describe(shape) + " on " + device.name +
                     ": " + explain(model.problem(), *solved.conflict);
  return ranking;
}

FusedSelection select_fused_config(const DeviceProps& device, const FusedShape& shape) {
  const FusedRanking ranking = rank_fused_configs(device, shape);
  FusedSelection selection;
  selection.feasible = ranking.configs.size();
  selection.reason = ranking.reason;
  if (!ranking.configs.empty()) {
    selection.config = ranking.configs.front().config;
    selection.cost = ranking.configs.front().cost;
  }
  return selection;
}

FusedSelection select_fused_config(const DeviceProps& device, Cell cell, int heads, int head_dim,
                                   int batch, DType dtype) {
  return select_fused_config(device, FusedShape{cell, heads, head_dim, batch, dtype});
}

std::optional<FusedConfig> fused_config_with(const DeviceProps& device, const FusedShape& shape,
                                             const FusedDecisions& decisions) {
  FusedTilingModel model(device, shape);
  if (!model.fix_decisions(decisions)) return std::nullopt;
  const SolveResult solved = solve_all(model.problem());
  if (solved.solutions.empty()) return std::nullopt;
  return model.config(solved.solutions.front());
}

}  // namespace flashrnn::tune

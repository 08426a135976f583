#include "flashtrain/trainer/cli/tune_report.h"

#include <map>
#include <sstream>
#include <vector>

#include "flashrnn/tune/device_query.h"
#include "flashrnn/tune/errors.h"
#include "flashrnn/tune/tc_explain.h"
#include "flashtrain/config/consistency.h"
#include "flashtrain/models/block_kind.h"
#include "flashtrain/trainer/batch/batch_probe.h"
#include "flashtrain/trainer/cli/command_line.h"

namespace flashtrain::trainer {
namespace {

namespace tune = flashrnn::tune;

tune::DeviceProps tuner_device(const std::string& name) {
  try {
    return tune::device_by_name(name.empty() ? "cuda" : name);
  } catch (const tune::DeviceQueryError& e) {
    throw UsageError(std::string(e.what()) + "; name a device with --device a100, h100, h200 or l4 " +
                     "(published properties)");
  } catch (const tune::ProblemError& e) {
    throw UsageError(std::string("--device: ") + e.what());
  }
}

// Layer numbers as "0-11" or "0, 2, 5".
std::string layer_list(const std::vector<std::int64_t>& layers) {
  const bool consecutive = layers.back() - layers.front() + 1 == std::int64_t(layers.size());
  if (consecutive && layers.size() > 1)
    return std::to_string(layers.front()) + "-" + std::to_string(layers.back());
  std::string out;
  for (std::int64_t layer : layers) out += (out.empty() ? "" : ", ") + std::to_string(layer);
  return out;
}

}  // namespace

std::string tune_report(const config::ResolvedConfig& resolved, const std::string& device_name) {
  const config::Config& c = resolved.config;
  const tune::DeviceProps device = tuner_device(device_name);

  // The recurrent kinds in the order they first appear, with their layers.
  std::vector<std::string> kinds;
  std::map<std::string, std::vector<std::int64_t>> layers;
  for (std::int64_t i = 0; i < c.model.n_layers; ++i) {
    const std::string& kind = c.model.layer_kind(i);
    const models::BlockKindInfo* row = models::find_block_kind(kind);
    if (row == nullptr || row->cell.empty()) continue;
    if (!layers.count(kind)) kinds.push_back(kind);
    layers[kind].push_back(i);
  }

  std::ostringstream out;
  out << "flashtrain tune: " << c.job.name << " on " << device.name
      << (device_name.empty() || device_name.rfind("cuda", 0) == 0 ? " (live device)" : " (published properties)")
      << "\n";
  if (kinds.empty()) {
    std::string recurrent;
    for (const models::BlockKindInfo& row : models::kBlockKinds)
      if (!row.cell.empty()) recurrent += (recurrent.empty() ? "" : ", ") + std::string(row.name);
    out << "the model has no recurrent blocks (" << recurrent << "); the fused kernel has nothing to run\n";
    return out.str();
  }
  if (c.model.backend != "fused" && c.model.backend != "auto")
    out << "note: model.backend = " << c.model.backend << "; the fused kernel runs only with fused or auto\n";
  // local_batch_size = auto is resolved by a probe when training starts; the
  // report shows the largest size that probe tries.
  std::int64_t batch = c.training.local_batch_size;
  if (c.training.auto_local_batch()) {
    batch = largest_batch_candidate(global_batch_per_rank(c, config::planned_world_size(c)), kMaxProbedBatch);
    out << "note: training.local_batch_size = auto; shown for " << batch
        << ", the largest size the start-up probe tries (the run prints the size it picks: pass it as "
           "--training.local_batch_size=N to see that one)\n";
  }
  out << "note: the fused backend runs its tensor-core kernels exactly where the tuner's model of them "
         "(tc_tiling.txt) fits the device, else the alternating backend\n";
  for (const std::string& kind : kinds) {
    tune::FusedShape shape;
    shape.cell = tune::parse_cell(std::string(models::find_block_kind(kind)->cell));
    shape.heads = int(c.model.n_heads);
    shape.head_dim = int(c.model.resolved_head_dim());
    shape.batch = int(batch);
    shape.dtype = c.training.mixed_precision == "bf16" ? tune::DType::kBf16 : tune::DType::kFp32;
    out << "\n== " << kind << " blocks (layers " << layer_list(layers[kind]) << " of " << c.model.n_layers
        << "): " << tune::describe(shape) << "\n";
    out << tune::explain_tc_choice(device, shape);
  }
  return out.str();
}

}  // namespace flashtrain::trainer

#include "flashtrain/trainer/checkpoint/exporter.h"

#include <torch/torch.h>

#include "flashtrain/config/json.h"
#include "flashtrain/data/tasks.h"
#include "flashtrain/data/tokenizer.h"
#include "flashtrain/trainer/checkpoint/staged_directory.h"
#include "flashtrain/trainer/batch/task_setup.h"
#include "flashtrain/trainer/checkpoint/tensor_file.h"

namespace flashtrain::trainer {

nlohmann::json export_config_json(const config::Config& config, const models::LanguageModelImpl& model,
                                  const TrainingProgress& progress) {
  // The section the model was built from (a model built from the config is
  // built from config.model; one built by hand, as the tests do, from its own).
  const models::LanguageModelOptions& o = model.options();
  const models::ModelConfig& m = o.model;
  nlohmann::json blocks = nlohmann::json::array();
  for (models::BlockKind kind : models::layer_kinds(m)) blocks.push_back(std::string(models::to_string(kind)));
  std::int64_t parameter_count = 0;
  for (const torch::Tensor& p : model.parameters()) parameter_count += p.numel();
  nlohmann::json out = {
      {"format", "flashtrain"},
      {"format_version", 1},
      {"vocab_size", o.vocab_size},
      {"d_model", m.dim},
      {"blocks", blocks},
      {"structure", models::to_string(models::structure_of(m))},
      {"n_heads", m.n_heads},
      {"head_dim", m.resolved_head_dim()},
      {"tie_embeddings", m.tie_embeddings},
      {"norm_eps", m.norm_eps},
      {"ffn_factor", m.ffn_factor},
      {"ffn_multiple_of", m.ffn_multiple_of},
      {"conv_kernel", m.conv_kernel},
      {"rope_theta", m.rope_theta},
      {"dtype", "float32"},
      {"parameters", parameter_count},
      {"step", progress.step},
      {"tokens_seen", progress.tokens_seen},
      {"tokenizer", nullptr},
      {"task", nullptr},
      {"training_config", config::to_json(config)},
  };
  if (!config.data.task.empty()) {
    const data::TaskSpec spec = task_spec(config.data, Split::kTrain);
    const data::Vocabulary vocabulary = data::task_vocabulary(spec.task, spec.options);
    out["task"] = {{"name", config.data.task}, {"tokens", vocabulary.names}, {"pad_id", vocabulary.pad_id},
                   {"classes", vocabulary.classes}};
  } else if (!config.tokenizer.path.empty()) {
    out["tokenizer"] = "tokenizer.model";
  }
  return out;
}

void export_model(const config::Config& config, const models::LanguageModelImpl& model,
                  const TrainingProgress& progress, const std::filesystem::path& output) {
  StagedDirectory out(output, "export");
  NamedTensors parameters;
  for (const auto& item : model.named_parameters())
    parameters.emplace_back(item.key(), item.value().detach().to(torch::kFloat));
  write_tensor_file(out, "model.safetensors", parameters);
  const nlohmann::json description = export_config_json(config, model, progress);
  out.write_file("config.json", description.dump(2) + "\n");
  if (description["tokenizer"].is_string())
    out.write_file("tokenizer.model", data::Tokenizer(config.tokenizer.path).serialized_model());
  out.commit({{"step", progress.step}});
}

}  // namespace flashtrain::trainer

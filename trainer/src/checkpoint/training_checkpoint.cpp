#include "flashtrain/trainer/checkpoint/training_checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <fstream>
#include <mutex>
#include <ostream>
#include <stdexcept>

#include "flashtrain/config/json.h"
#include "flashtrain/config/print.h"
#include "flashtrain/config/schema.h"
#include "flashtrain/trainer/checkpoint/checkpoint_folder.h"
#include "flashtrain/trainer/step/optimizer.h"
#include "flashtrain/trainer/checkpoint/tensor_file.h"

namespace flashtrain::trainer {
namespace fs = std::filesystem;
namespace {

constexpr const char* kModelFile = "model.safetensors";
constexpr const char* kOptimizerFile = "optimizer.safetensors";
constexpr const char* kStateFile = "state.json";
constexpr const char* kConfigFile = "config.json";

// The generators dropout and sampling would draw from; the loop itself draws
// nothing after initialisation, but a resumed run must continue them exactly.
std::vector<std::pair<std::string, at::Generator>> generators() {
  std::vector<std::pair<std::string, at::Generator>> out = {{"rng.cpu", at::detail::getDefaultCPUGenerator()}};
  if (torch::cuda::is_available())
    out.emplace_back("rng.cuda", at::globalContext().defaultGenerator(c10::Device(c10::DeviceType::CUDA, 0)));
  return out;
}

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path.string() + " is not valid JSON: " + e.what());
  }
}

// Whether a [model] key decides what the parameters are: the schema says
// (KeySpec::shapes_parameters); the others may change on resume.
bool shapes_the_parameters(const std::string& key) {
  const config::KeySpec* spec = config::schema().find_key("model", key);
  return spec == nullptr || spec->shapes_parameters;
}

}  // namespace

void save_checkpoint(const fs::path& directory, const TrainingProgress& progress,
                     const models::LanguageModelImpl& model, const torch::optim::AdamW& optimizer,
                     const config::Config& config) {
  StagedDirectory out(directory, "checkpoint");
  NamedTensors parameters;
  for (const auto& item : model.named_parameters()) parameters.emplace_back(item.key(), item.value());
  write_tensor_file(out, kModelFile, parameters);

  NamedTensors state = adamw_state(optimizer, model);
  for (auto& [name, generator] : generators()) {
    std::lock_guard<std::mutex> lock(generator.mutex());
    state.emplace_back(name, generator.get_state());
  }
  write_tensor_file(out, kOptimizerFile, state);

  const nlohmann::json progress_json = {
      {"format", "flashtrain-checkpoint"}, {"version", 1},
      {"step", progress.step},             {"tokens_seen", progress.tokens_seen},
      {"nonfinite_in_row", progress.nonfinite_in_row},
      {"nonfinite_total", progress.nonfinite_total},
      {"data_cursor", progress.data_cursor},
      {"world", {{"world_size", progress.world_size},
                 {"local_batch_size", progress.local_batch_size},
                 {"accumulation", progress.accumulation},
                 {"cpu_threads", progress.cpu_threads}}},
      {"config_hash", config::config_hash(config)}};
  out.write_file(kStateFile, progress_json.dump(2) + "\n");
  out.write_file(kConfigFile, config::to_json(config).dump(2) + "\n");
  out.commit({{"step", progress.step}});
}

CheckpointContents load_checkpoint(const fs::path& directory, const config::Config& config,
                                   models::LanguageModelImpl& model, torch::optim::AdamW* optimizer,
                                   bool verified) {
  if (!verified) {
    const nlohmann::json manifest = verify_manifest(directory);
    if (manifest.value("kind", "") == "export")
      throw std::runtime_error(directory.string() + " is an export (the model alone, for flashtrain.load_export " +
                               "in Python), not a training checkpoint; name a checkpoint, a step_N folder " +
                               "under the run's checkpoint.folder");
  }
  CheckpointContents contents;
  contents.config = read_json(directory / kConfigFile);
  check_same_model(contents.config, config, directory.string());
  const nlohmann::json state = read_json(directory / kStateFile);
  try {
    if (state.at("format") != "flashtrain-checkpoint" || state.at("version") != 1)
      throw std::runtime_error("unknown format " + state.value("format", "?"));
    contents.progress.step = state.at("step").get<std::int64_t>();
    contents.progress.tokens_seen = state.at("tokens_seen").get<std::int64_t>();
    contents.progress.nonfinite_in_row = state.at("nonfinite_in_row").get<std::int64_t>();
    contents.progress.nonfinite_total = state.at("nonfinite_total").get<std::int64_t>();
    contents.progress.data_cursor = state.at("data_cursor");
    if (state.contains("world")) {
      const nlohmann::json& world = state.at("world");
      contents.progress.world_size = world.at("world_size").get<std::int64_t>();
      contents.progress.local_batch_size = world.at("local_batch_size").get<std::int64_t>();
      contents.progress.accumulation = world.at("accumulation").get<std::int64_t>();
      contents.progress.cpu_threads = world.value("cpu_threads", std::int64_t{0});
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error((directory / kStateFile).string() + ": " + e.what());
  }

  load_parameters(model, read_tensor_file(directory / kModelFile), (directory / kModelFile).string());
  if (!optimizer) return contents;
  std::map<std::string, torch::Tensor> optimizer_state = read_tensor_file(directory / kOptimizerFile);
  for (auto& [name, generator] : generators()) {
    const auto it = optimizer_state.find(name);
    if (it == optimizer_state.end()) continue;  // e.g. saved without a GPU
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(it->second);
    optimizer_state.erase(it);
  }
  optimizer_state.erase("rng.cuda");  // saved with a GPU, resumed without one
  load_adamw_state(*optimizer, model, optimizer_state);
  return contents;
}

std::int64_t saved_local_batch_size(const fs::path& directory) {
  try {
    const nlohmann::json state = read_json(directory / kStateFile);
    if (!state.contains("world")) return 0;
    return std::max<std::int64_t>(0, state.at("world").at("local_batch_size").get<std::int64_t>());
  } catch (const std::exception&) {
    return 0;
  }
}

fs::path checkpoint_folder_path(const config::Config& config) {
  return fs::path(config.job.dump_folder) / config.checkpoint.folder;
}

fs::path choose_checkpoint(const config::Config& config, const std::string& explicit_directory,
                           std::ostream& log) {
  if (!explicit_directory.empty()) return explicit_directory;
  const CheckpointFolder folder(checkpoint_folder_path(config));
  std::vector<SkippedCheckpoint> skipped;
  const auto latest = folder.latest_valid(&skipped);
  for (const SkippedCheckpoint& s : skipped) log << "skipping " << s.entry.path.string() << ": " << s.reason << "\n";
  if (!latest)
    throw std::runtime_error("no checkpoint in " + folder.path().string() +
                             "; train first or name one with --checkpoint=DIR");
  return latest->path;
}

void check_same_model(const nlohmann::json& saved, const config::Config& config, const std::string& source) {
  const nlohmann::json current = config::to_json(config).at("model");
  // A key newer than the checkpoint had the value of its default when it was
  // saved (new keys default to what the code did before them, e.g. structure).
  const nlohmann::json defaults = config::to_json(config::Config{}).at("model");
  if (!saved.contains("model")) throw std::runtime_error(source + " has no [model] section");
  std::string differences;
  for (const auto& [key, value] : current.items()) {
    const auto it = saved["model"].find(key);
    if (!shapes_the_parameters(key)) continue;
    const bool missing = it == saved["model"].end();
    if (missing && value == defaults.at(key)) continue;
    if (missing || *it != value)
      differences += "\n  model." + key + ": checkpoint " +
                     (it == saved["model"].end() ? std::string("(missing)") : it->dump()) + ", config " +
                     value.dump();
  }
  if (!differences.empty())
    throw std::runtime_error(source + " was trained with another model; these keys differ:" + differences);
}

std::vector<std::string> config_changes(const nlohmann::json& saved, const config::Config& config) {
  std::vector<std::string> changes;
  // Named: a range-for over a temporary's items() would outlive the temporary.
  const nlohmann::json current = config::to_json(config);
  for (const auto& [section, keys] : current.items()) {
    if (section == "model") continue;
    for (const auto& [key, value] : keys.items()) {
      const nlohmann::json* before = nullptr;
      if (saved.contains(section) && saved[section].contains(key)) before = &saved[section][key];
      if (!before || *before != value)
        changes.push_back(section + "." + key + ": " + (before ? before->dump() : "(missing)") + " -> " + value.dump());
    }
  }
  return changes;
}

}  // namespace flashtrain::trainer

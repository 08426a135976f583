// The table of every section and key. Defaults live in config.h (the member
// initialisers); docs, checks and aliases live here, but for the sections a
// component owns with their rows ([model]: flashtrain/models/model_config.h).
#include "flashtrain/config/schema.h"

#include <type_traits>
#include <utility>

#include "flashtrain/data/tasks.h"
#include "flashtrain/models/block_kind.h"

namespace flashtrain::config {
namespace {

template <class Field>
constexpr ValueType value_type_of() {
  if constexpr (std::is_same_v<Field, bool>) return ValueType::kBool;
  else if constexpr (std::is_same_v<Field, std::int64_t>) return ValueType::kInt;
  else if constexpr (std::is_same_v<Field, double>) return ValueType::kFloat;
  else if constexpr (std::is_same_v<Field, std::string>) return ValueType::kString;
  else {
    static_assert(std::is_same_v<Field, std::vector<std::string>>, "unsupported config field type");
    return ValueType::kStringList;
  }
}

// Adds the keys of one section, binding each to its member of Config.
template <class Section>
class SectionBuilder {
 public:
  SectionBuilder(std::vector<KeySpec>& keys, std::string_view name, Section Config::*section)
      : keys_(keys), name_(name), section_(section) {}

  template <class Field>
  SectionBuilder& key(std::string_view name, Field Section::*field, std::string_view doc,
                      Constraint constraint = Constraint::none(),
                      std::vector<std::string_view> aliases = {}) {
    const auto section = section_;
    keys_.push_back(KeySpec{
        name_, name, value_type_of<Field>(), doc, std::move(constraint), std::move(aliases),
        [section, field](const Config& c) { return Value((c.*section).*field); },
        [section, field](Config& c, const Value& v) { (c.*section).*field = std::get<Field>(v); },
        /*keyword=*/{}});
    return *this;
  }

  // The key just added does not decide the parameters (KeySpec::shapes_parameters).
  SectionBuilder& not_shaping_parameters() {
    keys_.back().shapes_parameters = false;
    return *this;
  }

  // An integer key that also takes the string `keyword`, stored as 0 in the
  // member (KeySpec::keyword); `constraint` must exclude 0.
  SectionBuilder& int_or_keyword(std::string_view name, std::int64_t Section::*field, std::string_view keyword,
                                 std::string_view doc, Constraint constraint,
                                 std::vector<std::string_view> aliases = {}) {
    const auto section = section_;
    keys_.push_back(KeySpec{
        name_, name, ValueType::kInt, doc, std::move(constraint), std::move(aliases),
        [section, field, keyword](const Config& c) {
          const std::int64_t i = (c.*section).*field;
          return i == 0 ? Value(std::string(keyword)) : Value(i);
        },
        [section, field](Config& c, const Value& v) {
          (c.*section).*field = std::holds_alternative<std::string>(v) ? 0 : std::get<std::int64_t>(v);
        },
        keyword});
    return *this;
  }

 private:
  std::vector<KeySpec>& keys_;
  std::string_view name_;
  Section Config::*section_;
};

std::vector<std::string> task_names() {
  std::vector<std::string> names;
  for (const data::Task task : data::all_tasks()) names.emplace_back(data::to_string(task));
  return names;
}

Schema build_schema() {
  using C = Constraint;
  const C at_least_1 = C::at_least(1);
  std::vector<SectionSpec> sections = {
      {"job", "the run: its name and where its outputs go"},
      {"model", "the network: block kinds, sizes and the recurrent backend"},
      {"tokenizer", "the SentencePiece model that made the shards"},
      {"data", "training and validation data: token shards, or a state-tracking task"},
      {"optimizer", "AdamW; norms, biases and embeddings get no weight decay"},
      {"lr_scheduler", "learning rate: linear warm-up, then decay"},
      {"training", "the loop: steps, batch sizes, precision, seed"},
      {"validation", "loss (and task accuracy) on held-out data"},
      {"checkpoint", "saving and resuming"},
      {"metrics", "progress lines and the JSON-lines metrics file"},
      {"parallelism", "data-parallel training over processes"},
      {"debug", "slow checks for hunting bugs"},
  };
  std::vector<KeySpec> keys;

  SectionBuilder(keys, "job", &Config::job)
      .key("name", &JobConfig::name, "run name, shown in logs and metrics and stored in checkpoints",
           C::non_empty(), {"run_name", "experiment"})
      .key("dump_folder", &JobConfig::dump_folder,
           "folder of the run's outputs; checkpoint.folder and metrics.jsonl are relative to it",
           C::non_empty(), {"output_dir", "out_dir", "output"})
      .key("description", &JobConfig::description, "free text stored with checkpoints and metrics");

  {
    SectionBuilder rows(keys, "model", &Config::model);
    ModelConfig::describe<Constraint>(rows);  // flashtrain/models/model_config.h
  }

  SectionBuilder(keys, "tokenizer", &Config::tokenizer)
      .key("path", &TokenizerConfig::path,
           "SentencePiece model file; \"\" = none (then model.vocab_size must be set)", C::none(),
           {"model", "file", "tokenizer_path", "model_path"});

  SectionBuilder(keys, "data", &Config::data)
      .key("train_shards", &DataConfig::train_shards,
           "glob of the training token shards (llm.c format)", C::none(),
           {"train", "dataset_path", "train_files", "train_glob", "dataset"})
      .key("val_shards", &DataConfig::val_shards,
           "glob of the validation token shards; \"\" = none", C::none(),
           {"val", "validation_shards", "val_files", "val_glob"})
      .key("seq_len", &DataConfig::seq_len,
           "tokens per training sequence of the shards (a task pads each split to its own "
           "task_train_max_len / task_val_max_len instead)", C::int_range(1, 1 << 24),
           {"context_length", "block_size", "seq_length", "max_seq_len", "context", "sequence_length"})
      .key("shuffle", &DataConfig::shuffle,
           "visit the shard windows in a seeded random order (false: file order)")
      .key("task", &DataConfig::task,
           "state-tracking task generated on the fly instead of shards; \"\" = language modelling",
           C::one_of(task_names(), /*empty_allowed=*/true), {"task_name"})
      .key("task_train_min_len", &DataConfig::task_train_min_len,
           "task: shortest training sequence in tokens (answer included)", at_least_1)
      .key("task_train_max_len", &DataConfig::task_train_max_len,
           "task: longest training sequence in tokens; the training context", at_least_1)
      .key("task_val_min_len", &DataConfig::task_val_min_len,
           "task: shortest validation sequence (longer than training tests generalisation)",
           at_least_1)
      .key("task_val_max_len", &DataConfig::task_val_max_len,
           "task: longest validation sequence; the validation context", at_least_1)
      .key("task_val_long_max_len", &DataConfig::task_val_long_max_len,
           "task: a second test band, task_val_max_len + 1 .. this length; 0 = none",
           C::int_range(0, 1 << 20))
      .key("task_mask_answer", &DataConfig::task_mask_answer,
           "task (answer-last format): the input holds PAD where the answer is")
      .key("task_majority_alphabet", &DataConfig::task_majority_alphabet,
           "task majority and majority_count: number of symbols (the xLSTM paper's 63)",
           C::int_range(2, data::kMaxMajorityAlphabet))
      .key("task_brackets_multiplication", &DataConfig::task_brackets_multiplication,
           "task modular_arithmetic_brackets: '*' joins '+' and '-' (false: the variant without '*')");

  SectionBuilder(keys, "optimizer", &Config::optimizer)
      .key("name", &OptimizerConfig::name, "optimizer (AdamW: Adam with decoupled weight decay)",
           C::one_of({"adamw"}), {"optimizer", "type"})
      .key("lr", &OptimizerConfig::lr, "peak learning rate", C::positive(),
           {"learning_rate", "max_lr", "peak_lr"})
      .key("beta1", &OptimizerConfig::beta1, "decay of the first-moment average",
           C::float_range(0, false, 1, true), {"beta_1", "b1"})
      .key("beta2", &OptimizerConfig::beta2, "decay of the second-moment average",
           C::float_range(0, false, 1, true), {"beta_2", "b2"})
      .key("eps", &OptimizerConfig::eps, "added to the root of the second moment", C::positive(),
           {"epsilon", "adam_eps"})
      .key("weight_decay", &OptimizerConfig::weight_decay,
           "decoupled weight decay of matrices (norms, biases, embeddings: none)",
           C::non_negative(), {"wd", "decay"});

  SectionBuilder(keys, "lr_scheduler", &Config::lr_scheduler)
      .key("warmup_steps", &LrSchedulerConfig::warmup_steps,
           "steps of linear warm-up from 0 to optimizer.lr", C::at_least(0),
           {"warmup", "warmup_iters", "num_warmup_steps"})
      .key("decay", &LrSchedulerConfig::decay,
           "after warm-up: cosine to min_lr_ratio, wsd (flat, then linear decay), or constant",
           C::one_of({"cosine", "wsd", "constant"}), {"decay_type", "schedule", "scheduler"})
      .key("decay_ratio", &LrSchedulerConfig::decay_ratio,
           "wsd: fraction of training.steps spent in the final decay",
           C::float_range(0, true, 1, false), {"decay_fraction", "cooldown_ratio"})
      .key("min_lr_ratio", &LrSchedulerConfig::min_lr_ratio,
           "final learning rate as a fraction of optimizer.lr", C::float_range(0, false, 1, false),
           {"min_lr_factor", "lr_min_ratio", "final_lr_ratio", "min_lr"});

  SectionBuilder(keys, "training", &Config::training)
      .key("steps", &TrainingConfig::steps, "optimizer steps to train for", at_least_1,
           {"max_steps", "num_steps", "train_steps", "iterations", "total_steps", "iters"})
      .int_or_keyword("local_batch_size", &TrainingConfig::local_batch_size, "auto",
                      "sequences per process (rank) in one forward/backward pass (a micro-batch); "
                      "auto = at start-up, the largest power of two that divides the global batch per "
                      "rank and fits the GPU's memory with a 10% margin (a probe; capped at 256), on "
                      "the CPU the largest such one up to 16",
                      C::int_range(1, 1 << 24), {"batch_size", "micro_batch_size", "per_device_batch_size"})
      .key("global_batch_size", &TrainingConfig::global_batch_size,
           "sequences per optimizer step over all ranks = local_batch_size x world size x "
           "accumulation micro-steps (it must divide evenly); 0 = local_batch_size x world size, "
           "no accumulation. Keep it fixed to change the world size without changing the training",
           C::at_least(0), {"total_batch_size"})
      .key("grad_clip", &TrainingConfig::grad_clip,
           "clip the global gradient norm to this; 0 = no clipping", C::non_negative(),
           {"max_norm", "clip_grad_norm", "gradient_clipping", "max_grad_norm", "clip"})
      .key("mixed_precision", &TrainingConfig::mixed_precision,
           "compute precision; bf16 = autocast with fp32 master weights",
           C::one_of({"bf16", "fp32"}), {"precision", "dtype", "mixed_precision_param", "amp"})
      .key("seed", &TrainingConfig::seed, "seed of initialisation, data order and dropout",
           C::at_least(0), {"random_seed"})
      .key("device", &TrainingConfig::device, "where to train; auto = cuda if available, else cpu",
           C::one_of({"auto", "cpu", "cuda"}))
      .key("max_nonfinite_steps", &TrainingConfig::max_nonfinite_steps,
           "steps with a NaN/Inf loss or gradient are skipped; stop after this many in a row",
           C::int_range(1, 1 << 20), {"max_skipped_steps", "nan_patience"})
      .key("cuda_graph", &TrainingConfig::cuda_graph,
           "run each training step as one replayed CUDA graph: auto = where possible (on a GPU), "
           "saying why not otherwise; on = or fail; off = eager steps",
           C::one_of({"auto", "on", "off"}), {"cuda_graphs", "graph"})
      .key("target_loss", &TrainingConfig::target_loss,
           "stop early once the mean training loss since the last progress line is at most this "
           "(then validate and save as at the last step); 0 = train all steps",
           C::non_negative(), {"stop_at_loss", "early_stop_loss"})
      .key("profile_steps", &TrainingConfig::profile_steps,
           "profile this many steps after the first three (Kineto): a Chrome/Perfetto trace under "
           "<dump_folder>/profile and a summary of where the time went; 0 = off (--profile[=N])",
           C::at_least(0), {"profile", "profiler_steps"});

  SectionBuilder(keys, "validation", &Config::validation)
      .key("every", &ValidationConfig::every,
           "validate every this many steps and at the end; 0 = never", C::at_least(0),
           {"freq", "eval_every", "val_every", "eval_interval", "interval"})
      .key("steps", &ValidationConfig::steps,
           "global batches per validation (the same rows on any number of ranks)", C::int_range(1, 1 << 24),
           {"eval_steps", "val_steps", "eval_iters"});

  SectionBuilder(keys, "checkpoint", &Config::checkpoint)
      .key("enable", &CheckpointConfig::enable, "write checkpoints", C::none(),
           {"enabled", "save"})
      .key("folder", &CheckpointConfig::folder, "checkpoint directory, relative to job.dump_folder",
           C::non_empty(), {"dir", "path", "checkpoint_dir", "directory"})
      .key("interval", &CheckpointConfig::interval,
           "save every this many steps, and always at the end and on a stop signal "
           "(SIGINT, SIGTERM, SIGHUP, SIGUSR1); 0 = only then",
           C::at_least(0), {"save_every", "every", "freq", "save_interval"})
      .key("keep_last", &CheckpointConfig::keep_last,
           "keep the newest this many checkpoints; 0 = keep all", C::at_least(0),
           {"keep_latest_k", "keep", "max_to_keep"})
      .key("resume", &CheckpointConfig::resume,
           "latest = newest checkpoint in folder if there is one; none = start fresh; "
           "else a checkpoint directory",
           C::non_empty(), {"resume_from", "load", "restore"})
      .key("resume_data", &CheckpointConfig::resume_data,
           "on resume, continue the checkpoint's data stream exactly; false = keep its weights, optimizer "
           "and step but draw the data afresh (after changing training.seed, data.shuffle, data.seq_len "
           "or the shards)",
           C::none(), {"restore_data", "resume_loader"});

  SectionBuilder(keys, "metrics", &Config::metrics)
      .key("log_every", &MetricsConfig::log_every,
           "print a progress line and write metrics every this many steps", at_least_1, {"log_freq", "log_interval", "every", "freq"})
      .key("jsonl", &MetricsConfig::jsonl,
           "JSON-lines metrics file, relative to job.dump_folder; \"\" = none", C::none(),
           {"jsonl_path", "path", "file", "metrics_file"});

  SectionBuilder(keys, "parallelism", &Config::parallelism)
      .key("data_parallel", &ParallelismConfig::data_parallel,
           "data-parallel size (processes); 0 = the launcher's world size", C::int_range(0, 1 << 20),
           {"data_parallel_degree", "dp", "world_size", "data_parallel_replicate_degree"})
      .key("nproc", &ParallelismConfig::nproc,
           "ranks flashtrain starts on this machine itself (--nproc N; one per GPU); keep 1 under "
           "torchrun or SLURM",
           C::int_range(1, 1024), {"nproc_per_node", "num_processes", "gpus"})
      .key("bucket_size_mb", &ParallelismConfig::bucket_size_mb,
           "size of the gradient all-reduce buckets in MiB", C::positive(),
           {"bucket_cap_mb", "bucket_mb"})
      .key("allreduce_in_graph", &ParallelismConfig::allreduce_in_graph,
           "with a CUDA graph of the step (training.cuda_graph): all-reduce the gradients inside it, "
           "overlapping backward; false = eagerly between a graph of forward+backward and one of the update",
           C::none(), {"graph_allreduce", "allreduce_inside_graph"})
      .key("backend", &ParallelismConfig::backend,
           "collectives between ranks: nccl (GPUs), store (CPU ranks through the TCP store; "
           "tests), auto = nccl on CUDA, store on the CPU",
           C::one_of({"auto", "nccl", "store"}), {"dist_backend", "comm_backend"})
      .key("timeout_seconds", &ParallelismConfig::timeout_seconds,
           "longest wait for the rendezvous or one collective before a rank gives up (a dead "
           "rank on the same machine is noticed within a second)", C::positive(),
           {"timeout", "nccl_timeout", "collective_timeout"});

  SectionBuilder(keys, "debug", &Config::debug)
      .key("anomaly_detection", &DebugConfig::anomaly_detection,
           "autograd anomaly detection: names the op that made a NaN (slow)", C::none(),
           {"detect_anomaly", "anomaly"})
      .key("deterministic", &DebugConfig::deterministic,
           "deterministic algorithms only (slower kernels, no atomics-based reductions)");

  return Schema(std::move(sections), std::move(keys));
}

}  // namespace

std::string KeySpec::dotted_name() const { return std::string(section) + "." + std::string(name); }

std::string KeySpec::subject() const {
  return "'" + std::string(name) + "' in [" + std::string(section) + "]";
}

std::string KeySpec::type_text() const {
  std::string text = type_description(type);
  if (!keyword.empty()) text += " or \"" + std::string(keyword) + "\"";
  return text;
}

std::string KeySpec::allowed() const {
  std::string text = constraint.describe();
  if (!keyword.empty()) text += (text.empty() ? "\"" : " or \"") + std::string(keyword) + "\"";
  return text;
}

bool KeySpec::is_keyword(const Value& value) const {
  const auto* s = std::get_if<std::string>(&value);
  return !keyword.empty() && type != ValueType::kString && s && *s == keyword;
}

Schema::Schema(std::vector<SectionSpec> sections, std::vector<KeySpec> keys)
    : sections_(std::move(sections)), keys_(std::move(keys)) {}

const SectionSpec* Schema::find_section(std::string_view name) const {
  for (const SectionSpec& section : sections_)
    if (section.name == name) return &section;
  return nullptr;
}

const KeySpec* Schema::find_key(std::string_view section, std::string_view name) const {
  for (const KeySpec& key : keys_)
    if (key.section == section && key.name == name) return &key;
  return nullptr;
}

std::vector<const KeySpec*> Schema::keys_of(std::string_view section) const {
  std::vector<const KeySpec*> found;
  for (const KeySpec& key : keys_)
    if (key.section == section) found.push_back(&key);
  return found;
}

const Schema& schema() {
  static const Schema instance = build_schema();
  return instance;
}

std::optional<ValueProblem> check_value(const KeySpec& key, const Value& value) {
  if (const auto* list = std::get_if<std::vector<std::string>>(&value)) {
    if (list->empty()) return ValueProblem{key.subject() + " must not be an empty array", {}};
    for (std::size_t i = 0; i < list->size(); ++i) {
      const std::string problem = key.constraint.problem((*list)[i]);
      if (problem.empty()) continue;
      // A plain string is a list of one: no element number then.
      if (list->size() == 1) return ValueProblem{key.subject() + " " + problem, i};
      return ValueProblem{"element " + std::to_string(i + 1) + " of " + key.subject() + " " + problem, i};
    }
    return std::nullopt;
  }
  if (key.is_keyword(value)) return std::nullopt;
  if (!key.keyword.empty() && std::holds_alternative<std::string>(value))
    return ValueProblem{key.subject() + " must be " + key.type_text() + "; got " + format_value(value), {}};
  const std::string problem = key.constraint.problem(value);
  if (problem.empty()) return std::nullopt;
  // "must be in [1, 16777216]; got 0" -> 'must be in [1, 16777216] or "auto"; got 0'
  if (!key.keyword.empty()) return ValueProblem{key.subject() + " must be " + key.allowed() + "; got " + format_value(value), {}};
  return ValueProblem{key.subject() + " " + problem, {}};
}

const std::vector<std::string>& model_kinds() {
  static const std::vector<std::string> kinds = models::block_kind_names();
  return kinds;
}

bool is_multihead_rnn_kind(std::string_view kind) {
  const models::BlockKindInfo* row = models::find_block_kind(kind);
  return row != nullptr && !row->cell.empty();
}

}  // namespace flashtrain::config

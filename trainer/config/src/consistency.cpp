#include "flashtrain/config/consistency.h"

#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "flashtrain/data/error.h"
#include "flashtrain/data/loader.h"
#include "flashtrain/models/block_kind.h"
#include "flashtrain/models/option_defaults.h"
#include "flashtrain/data/tasks.h"

namespace flashtrain::config {
namespace {

using std::to_string;

// A plain model stacks bare recurrent layers; the other kinds exist only as
// residual blocks.
void check_plain_kinds(const ResolvedConfig& resolved) {
  const ModelConfig& m = resolved.config.model;
  if (m.structure != "plain") return;
  for (std::int64_t layer = 0; layer < m.n_layers; ++layer) {
    const std::string& kind = m.layer_kind(layer);
    const models::BlockKindInfo* row = models::find_block_kind(kind);
    if (row != nullptr && row->plain) continue;
    throw resolved.error_at({"model.structure", "model.kind"},
                            "model.structure = plain stacks " + models::plain_kind_names() +
                                " layers, but model.kind gives layer " + to_string(layer) + " the kind " + kind +
                                "; use model.structure = residual for " + kind + " blocks");
  }
}

void check_blocks(const ResolvedConfig& resolved) {
  const ModelConfig& m = resolved.config.model;
  if (m.kind.size() != 1 && static_cast<std::int64_t>(m.kind.size()) != m.n_layers)
    throw resolved.error_at({"model.kind", "model.n_layers"},
                            "model.kind lists " + to_string(m.kind.size()) +
                                " block kinds but model.n_layers is " + to_string(m.n_layers) +
                                "; give one kind for all layers or one per layer");

  check_plain_kinds(resolved);
  bool uses_heads = false;  // a block kind that model.n_heads splits
  bool attention = false;   // transformer blocks: heads of dim / n_heads, rotary
  std::string rnn_kind;     // a block kind that needs n_heads x head_dim == dim
  for (std::int64_t layer = 0; layer < m.n_layers; ++layer) {
    const std::string& kind = m.layer_kind(layer);
    const models::BlockKindInfo* row = models::find_block_kind(kind);
    if (row != nullptr && row->heads) uses_heads = true;
    if (row != nullptr && row->kind == models::BlockKind::kTransformer) attention = true;
    if (rnn_kind.empty() && is_multihead_rnn_kind(kind)) rnn_kind = kind;
  }
  if (!uses_heads) return;
  // Attention splits model.dim itself (model.head_dim is the recurrent blocks'),
  // and rotary positions rotate pairs of a head's units.
  if (attention && (m.dim % m.n_heads != 0 || (m.dim / m.n_heads) % 2 != 0))
    throw resolved.error_at({"model.dim", "model.n_heads", "model.kind"},
                            "transformer blocks split model.dim (" + to_string(m.dim) + ") into model.n_heads (" +
                                to_string(m.n_heads) + ") heads of an even width (rotary positions rotate pairs " +
                                "of units); " +
                                (m.dim % m.n_heads != 0 ? std::string("it is not divisible")
                                                        : "dim / n_heads = " + to_string(m.dim / m.n_heads) +
                                                              " is odd"));
  if (m.head_dim == 0 && m.dim % m.n_heads != 0)
    throw resolved.error_at({"model.dim", "model.n_heads", "model.head_dim"},
                            "model.dim (" + to_string(m.dim) + ") is not divisible by model.n_heads (" +
                                to_string(m.n_heads) + "), so model.head_dim = 0 (dim / n_heads) has "
                                "no value; change them or set model.head_dim");
  if (!rnn_kind.empty() && m.n_heads * m.resolved_head_dim() != m.dim)
    throw resolved.error_at(
        {"model.dim", "model.n_heads", "model.head_dim", "model.kind"},
        "model.n_heads x model.head_dim = " + to_string(m.n_heads) + " x " + to_string(m.head_dim) +
            " = " + to_string(m.n_heads * m.head_dim) + " must equal model.dim (" + to_string(m.dim) +
            ") for " + rnn_kind + " blocks, whose heads split the state");
}

data::TaskSpec task_spec(const DataConfig& d, std::int64_t min_len, std::int64_t max_len) {
  data::TaskSpec spec;
  spec.task = data::parse_task(d.task);
  spec.options.max_length = static_cast<int>(d.task_max_len());
  spec.options.majority_alphabet = static_cast<int>(d.task_majority_alphabet);
  spec.options.brackets_multiplication = d.task_brackets_multiplication;
  spec.lengths = {static_cast<int>(min_len), static_cast<int>(max_len)};
  return spec;
}

// One length range of a task: ordered, and one the generator can draw (data/
// knows each task's shortest and odd-only lengths). Each split's batches are
// padded to its own max_len, so data.seq_len does not bound them.
void check_task_lengths(const ResolvedConfig& resolved, const std::string& split) {
  const DataConfig& d = resolved.config.data;
  const bool train = split == "train";
  const std::int64_t min_len = train ? d.task_train_min_len : d.task_val_min_len;
  const std::int64_t max_len = train ? d.task_train_max_len : d.task_val_max_len;
  const std::string min_key = "data.task_" + split + "_min_len";
  const std::string max_key = "data.task_" + split + "_max_len";
  if (min_len > max_len)
    throw resolved.error_at({min_key, max_key, "data.task"}, min_key + " (" + to_string(min_len) +
                                                    ") is greater than " + max_key + " (" +
                                                    to_string(max_len) + ")");
  const int shortest = data::task_min_length(data::parse_task(d.task));
  if (min_len < shortest)
    throw resolved.error_at({min_key, "data.task"},
                            min_key + " (" + to_string(min_len) + ") is shorter than the " +
                                to_string(shortest) + " tokens of the shortest " + d.task +
                                " sequence");
  try {
    data::generate_sample(task_spec(d, min_len, max_len), /*seed=*/0, /*index=*/0);
  } catch (const std::invalid_argument& e) {
    throw resolved.error_at({min_key, max_key, "data.task"},
                            min_key + " and " + max_key + " do not suit the task: " + e.what());
  }
}

void check_data(const ResolvedConfig& resolved) {
  const Config& c = resolved.config;
  if (!c.data.task.empty()) {
    check_task_lengths(resolved, "train");
    check_task_lengths(resolved, "val");
    if (c.data.task_val_long_max_len > 0) {
      if (c.data.task_val_long_max_len <= c.data.task_val_max_len)
        throw resolved.error_at({"data.task_val_long_max_len", "data.task_val_max_len"},
                                "data.task_val_long_max_len (" + to_string(c.data.task_val_long_max_len) +
                                    ") must exceed data.task_val_max_len (" + to_string(c.data.task_val_max_len) +
                                    "): the long band starts after it; or set 0 for none");
      try {
        data::generate_sample(task_spec(c.data, c.data.task_val_max_len + 1, c.data.task_val_long_max_len), 0, 0);
      } catch (const std::invalid_argument& e) {
        throw resolved.error_at({"data.task_val_long_max_len", "data.task"},
                                std::string("data.task_val_long_max_len does not suit the task: ") + e.what());
      }
    }
    const data::TaskSpec spec = task_spec(c.data, c.data.task_train_min_len, c.data.task_train_max_len);
    const int task_vocab = data::task_vocabulary(spec.task, spec.options).size();
    if (c.model.vocab_size != 0 && c.model.vocab_size < task_vocab)
      throw resolved.error_at({"model.vocab_size", "data.task"},
                              "model.vocab_size (" + to_string(c.model.vocab_size) +
                                  ") is smaller than the " + to_string(task_vocab) +
                                  "-token vocabulary of task " + c.data.task +
                                  "; set 0 to use the task's");
    return;
  }
  if (c.data.train_shards.empty())
    throw resolved.error_at({"data.train_shards", "data.task"},
                            "data.train_shards is empty and data.task is not set; name the "
                            "training shards or a state-tracking task");
  if (c.validation.every > 0 && c.data.val_shards.empty())
    throw resolved.error_at({"data.val_shards", "validation.every"},
                            "validation.every is " + to_string(c.validation.every) +
                                " but data.val_shards is empty; name validation shards or set "
                                "validation.every = 0");
  if (c.model.vocab_size == 0 && c.tokenizer.path.empty())
    throw resolved.error_at({"model.vocab_size", "tokenizer.path"},
                            "model.vocab_size is 0 (take it from the tokenizer) but "
                            "tokenizer.path is empty; set one of them");
}

// global_batch_size divides into local batches over `world_size` processes
// (local_batch_size = auto: into one whole batch per process; the trainer
// picks a local batch that divides it).
void check_batch(const ResolvedConfig& resolved, std::int64_t world_size, const std::string& world) {
  const TrainingConfig& t = resolved.config.training;
  if (t.auto_local_batch()) {
    if (t.global_batch_size == 0 || t.global_batch_size % world_size == 0) return;
    throw resolved.error_at(
        {"training.global_batch_size", "training.local_batch_size", "parallelism.data_parallel",
         "parallelism.nproc"},
        "training.global_batch_size (" + to_string(t.global_batch_size) + ") is not a multiple of " + world +
            " (" + to_string(world_size) + "), so training.local_batch_size = auto has no whole batch per rank "
            "to divide");
  }
  if (t.global_batch_size == 0 || t.global_batch_size % (t.local_batch_size * world_size) == 0) return;
  throw resolved.error_at(
      {"training.global_batch_size", "training.local_batch_size", "parallelism.data_parallel",
       "parallelism.nproc"},
      "training.global_batch_size (" + to_string(t.global_batch_size) +
          ") is not a multiple of training.local_batch_size x " + world + " = " +
          to_string(t.local_batch_size) + " x " + to_string(world_size) + " = " +
          to_string(t.local_batch_size * world_size));
}

void check_parallelism(const ResolvedConfig& resolved) {
  const ParallelismConfig& p = resolved.config.parallelism;
  if (p.data_parallel > 0 && p.nproc > 1 && p.data_parallel != p.nproc)
    throw resolved.error_at({"parallelism.data_parallel", "parallelism.nproc"},
                            "parallelism.data_parallel (" + to_string(p.data_parallel) +
                                ") differs from parallelism.nproc (" + to_string(p.nproc) +
                                "), the number of processes flashtrain starts");
  const std::string world = p.data_parallel > 0 ? "parallelism.data_parallel" : "parallelism.nproc";
  check_batch(resolved, planned_world_size(resolved.config), world);
}

// WSD: warm-up, a flat phase, then the decay over the last decay_ratio of the
// steps; the warm-up and the decay must not overlap. (Cosine and constant
// allow a warm-up longer than the run: short test runs end while warming up.)
void check_schedule(const ResolvedConfig& resolved) {
  const Config& c = resolved.config;
  if (c.lr_scheduler.decay != "wsd") return;
  const std::int64_t warmup = c.lr_scheduler.warmup_steps;
  const std::int64_t decay_steps = wsd_decay_steps(c);
  if (warmup + decay_steps > c.training.steps)
    throw resolved.error_at(
        {"lr_scheduler.warmup_steps", "lr_scheduler.decay_ratio", "training.steps"},
        "lr_scheduler.warmup_steps (" + to_string(warmup) + ") plus the wsd decay (decay_ratio x "
        "steps = " + to_string(decay_steps) + ") exceed training.steps (" +
            to_string(c.training.steps) + ")");
}

void check_initialisation(const ResolvedConfig& resolved) {
  const ModelConfig& m = resolved.config.model;
  if (const std::string problem = models::defaults::retain_bias_problem(
          m.retain_bias_min, m.retain_bias_max, "model.retain_bias_min", "model.retain_bias_max");
      !problem.empty())
    throw resolved.error_at({"model.retain_bias_min", "model.retain_bias_max"}, problem);
}

}  // namespace

void check_consistency(const ResolvedConfig& resolved) {
  check_blocks(resolved);
  check_initialisation(resolved);
  check_data(resolved);
  check_parallelism(resolved);
  check_schedule(resolved);
}

std::int64_t planned_world_size(const Config& config) {
  return config.parallelism.data_parallel > 0 ? config.parallelism.data_parallel
                                              : config.parallelism.nproc;
}

void check_world_size(const ResolvedConfig& resolved, std::int64_t world_size) {
  if (world_size < 1) throw std::invalid_argument("check_world_size: world_size must be >= 1");
  const std::int64_t data_parallel = resolved.config.parallelism.data_parallel;
  if (data_parallel > 0 && data_parallel != world_size)
    throw resolved.error_at({"parallelism.data_parallel"},
                            "parallelism.data_parallel is " + to_string(data_parallel) +
                                " but the launcher started " + to_string(world_size) +
                                " processes; set it to 0 to follow the launcher");
  check_batch(resolved, world_size, "the world size");
}

std::int64_t wsd_decay_steps(const Config& config) {
  return std::llround(config.lr_scheduler.decay_ratio * static_cast<double>(config.training.steps));
}

std::int64_t accumulation_steps(const Config& config, std::int64_t world_size) {
  const TrainingConfig& t = config.training;
  if (t.auto_local_batch())
    throw std::logic_error("accumulation_steps: training.local_batch_size = auto is not resolved yet");
  return t.global_batch_size == 0 ? 1 : t.global_batch_size / (t.local_batch_size * world_size);
}

namespace {

// What to do when a file of the full offline corpus (.data/corpus, which the
// LM configs name and setup.sh does not build) is missing; "" for other paths.
std::string missing_corpus_hint(const std::string& path) {
  if (path.rfind(".data/corpus/", 0) != 0) return "";
  return "; the full offline corpus is not built: bash data/corpus/build_corpus.sh makes .data/corpus "
         "(English text from Debian packages, ~39 M tokens; it downloads the packages and trains the "
         "tokenizer), or try flashtrain --config configs/quickstart.toml on the small corpus setup.sh built";
}

}  // namespace

void check_input_files(const ResolvedConfig& resolved) {
  namespace fs = std::filesystem;
  const Config& c = resolved.config;
  std::error_code ignored;
  if (c.data.task.empty()) {
    if (!c.tokenizer.path.empty() && !fs::is_regular_file(c.tokenizer.path, ignored))
      throw resolved.error_at({"tokenizer.path"}, "tokenizer.path '" + c.tokenizer.path + "' is not a file" +
                                                      missing_corpus_hint(c.tokenizer.path));
    for (const auto& [key, pattern] : {std::pair{"data.train_shards", &c.data.train_shards},
                                       std::pair{"data.val_shards", &c.data.val_shards}}) {
      if (pattern->empty()) continue;
      try {
        data::find_shards(*pattern);
      } catch (const data::DataError&) {
        throw resolved.error_at({key}, std::string("no file matches ") + key + " '" + *pattern + "'" +
                                           missing_corpus_hint(*pattern));
      }
    }
  }
  const std::string& resume = c.checkpoint.resume;
  if (resume != "latest" && resume != "none" && !fs::is_directory(resume, ignored))
    throw resolved.error_at({"checkpoint.resume"},
                            "checkpoint.resume '" + resume +
                                "' is not a checkpoint directory (nor latest or none)");
}

}  // namespace flashtrain::config

#include "flashtrain/trainer/run/trainer.h"

#include <c10/cuda/CUDACachingAllocator.h>
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include "step/token_loss.h"
#include "flashrnn/tune/device_query.h"
#include "flashtrain/config/consistency.h"
#include "flashtrain/config/print.h"
#include "flashtrain/data/error.h"
#include "flashtrain/data/tasks.h"
#include "flashtrain/distributed/collectives.h"
#include "flashtrain/distributed/reducer.h"
#include "flashtrain/distributed/startup_check.h"
#include "flashtrain/models/parameter_groups.h"
#include "flashtrain/trainer/batch/auto_batch.h"
#include "flashtrain/trainer/batch/batch_source.h"
#include "flashtrain/trainer/checkpoint/checkpoint_folder.h"
#include "flashtrain/trainer/step/device_step.h"
#include "flashtrain/trainer/step/lr_schedule.h"
#include "flashtrain/trainer/run/metrics_log.h"
#include "flashtrain/trainer/run/model_factory.h"
#include "flashtrain/trainer/step/nonfinite_guard.h"
#include "flashtrain/trainer/step/optimizer.h"
#include "flashtrain/trainer/run/peak_flops.h"
#include "flashtrain/trainer/run/progress.h"
#include "flashtrain/trainer/run/run_folder.h"
#include "flashtrain/trainer/checkpoint/staged_directory.h"
#include "flashtrain/trainer/step/step_profiler.h"
#include "flashtrain/trainer/run/stop_signal.h"
#include "flashtrain/trainer/batch/task_setup.h"
#include "flashtrain/trainer/checkpoint/training_checkpoint.h"
#include "flashtrain/trainer/run/world_rules.h"

namespace flashtrain::trainer {
namespace fs = std::filesystem;
namespace {

// Opens a split's batches (make: a make_*_batches call); shards too short for
// one global batch are a config error naming the keys that decide it.
template <class Make>
std::unique_ptr<BatchSource> open_split(const config::ResolvedConfig& resolved, const std::string& split,
                                        Make make) {
  try {
    return make();
  } catch (const data::TooFewWindows& e) {
    const std::string shards = "data." + split + "_shards";
    throw resolved.error_at(
        {shards, "data.seq_len", "training.local_batch_size", "training.global_batch_size"},
        shards + " holds " + std::to_string(e.windows) + " windows of data.seq_len + 1 = " +
            std::to_string(resolved.config.data.seq_len + 1) + " tokens, fewer than one global batch of " +
            std::to_string(e.global_batch) + " sequences; lower data.seq_len or the batch, or give it more data (" +
            e.what() + ")");
  }
}

using Clock = std::chrono::steady_clock;

// Parameters from which training.device = auto landing on the CPU gets a
// warning (the quickstart's model has ~1M; the LM configs' ~36-125M).
constexpr std::int64_t kLargeForTheCpu = 10'000'000;

// A step's report, and whether the non-finite guard has counted it yet (the
// eager step counts at once, to decide on the update; a queued device step's
// report is counted when the run goes through it, in step order).
struct FinishedStep {
  StepReport report;
  bool counted_in_guard;
};

// At most this many device steps are queued before their numbers are read back.
constexpr std::int64_t kMostQueuedSteps = 64;

bool is_log_step(const config::Config& c, std::int64_t step) {
  return step % c.metrics.log_every == 0 || step == 1 || step == c.training.steps;
}

bool is_checkpoint_step(const config::Config& c, std::int64_t step) {
  return c.checkpoint.enable && c.checkpoint.interval > 0 && step % c.checkpoint.interval == 0;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string metrics_path(const config::Config& c) {
  return c.metrics.jsonl.empty() ? "" : (fs::path(c.job.dump_folder) / c.metrics.jsonl).string();
}

// Peak FLOP/s for MFU: known GPUs only (a CPU has no meaningful entry).
std::optional<double> device_peak(torch::Device device, bool bf16, std::string* name) {
  if (!device.is_cuda()) return std::nullopt;
  try {
    *name = flashrnn::tune::query_cuda_device(device.has_index() ? device.index() : 0).name;
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return peak_flops_per_second(*name, bf16);
}

}  // namespace

struct Trainer::Impl {
  // Only rank 0 writes metrics (and checkpoints, and the log: the caller
  // gives the other ranks a log that discards).
  Impl(const config::ResolvedConfig& r, std::ostream& out, World w)
      : resolved(r), config(resolved.config), log(out), world(std::move(w)),
        run_lock(world.is_rank0() ? std::make_unique<RunFolderLock>(config.job.dump_folder) : nullptr),
        guard(config.training.max_nonfinite_steps), schedule(config), folder(checkpoint_folder_path(config)),
        metrics(world.is_rank0() ? metrics_path(config) : std::string()) {}

  void build();
  void choose_step_mode();
  void resume();
  void restore_data_stream(const fs::path& source);
  void keep_cpu_threads();
  void report_start();
  std::vector<Batch> next_micro_batches(std::int64_t* scored);
  void train_step();
  void device_train_step(StepReport report);
  StepReport finish_step(StepReport report);
  bool act_on(FinishedStep finished, StepProfiler& profiler, TrainResult& result);
  std::vector<FinishedStep> take_finished(bool wait);
  EvalResult validate();
  // Sums one validation set over the ranks and summarizes it.
  EvalResult evaluate_on(BatchSource& batches);
  fs::path save();
  void log_progress(const StepReport& report);
  std::optional<fs::path> choose_resume_source(bool* verified);
  void check_resume_layout();
  std::int64_t peek_saved_local_batch() const;
  int agreed_stop_signal(bool* stop);

  config::ResolvedConfig resolved;
  const config::Config& config;
  // Where the validation batches come from: the config, or (a split of fewer
  // windows than one global batch) the config with one batch of what there is.
  config::Config validation_config;
  std::ostream& log;
  World world;
  // Rank 0 holds the run folder: a second run there stops at once.
  std::unique_ptr<RunFolderLock> run_lock;
  // An absolute checkpoint.folder can be shared by two dump folders: two runs
  // saving into it would take each other's steps, so it is locked as well.
  std::unique_ptr<RunFolderLock> checkpoint_lock;

  torch::Device device{torch::kCPU};
  bool bf16 = false;
  std::int64_t vocab_size = 0;
  std::vector<std::int32_t> answer_tokens;  // tasks: what accuracy is scored over
  std::int64_t accumulation = 1;
  std::int64_t tokens_per_step = 0;
  double flops_per_token = 0.0;
  std::optional<double> peak_flops;
  std::string device_name;

  models::LanguageModel model{nullptr};
  std::vector<torch::Tensor> parameters;
  std::unique_ptr<torch::optim::AdamW> optimizer;
  // The step as device work (a CUDA graph on a GPU); null: the eager step.
  // Made at the first step, after resume() has loaded the optimizer's state.
  std::unique_ptr<DeviceStep> device_step;
  std::optional<DeviceStepOptions> device_step_options;
  // Steps the device step queued whose numbers are not read back yet, and
  // reports complete but not taken.
  std::vector<StepReport> queued_steps;
  std::vector<FinishedStep> finished_steps;
  std::unique_ptr<BatchSource> batches;
  // Data parallel only: gradients in flat buckets, all-reduced during backward.
  std::unique_ptr<distributed::Reducer> reducer;
  NonfiniteGuard guard;
  LrSchedule schedule;
  CheckpointFolder folder;
  MetricsLog metrics;
  TrainingProgress progress;

  std::function<void(const StepReport&)> callback;
  std::atomic<bool> stop_requested{false};
  std::int64_t last_saved_step = -1;
  fs::path last_checkpoint;

  // Steps and seconds spent in them since the last progress line (validation
  // and saves excluded), for tokens/s and the ETA.
  double window_seconds = 0.0;
  std::int64_t window_steps = 0;
  // Training loss since the last progress line, for training.target_loss.
  double window_loss_sum = 0.0;
  std::int64_t window_loss_steps = 0;
  Clock::time_point run_start;
};

void Trainer::Impl::build() {
  config::check_world_size(resolved, world.size);
  // Inputs and outputs before anything trains: a bad shard, tokenizer or an
  // unwritable checkpoint folder stops the run now, not at step 100.
  check_run_inputs(resolved);
  if (world.is_rank0() && config.checkpoint.enable) {
    check_writable(folder.path(), "checkpoint.folder");
    checkpoint_lock = std::make_unique<RunFolderLock>(folder.path(), "checkpoint.folder");
  }
  device = world.device;
  bf16 = config.training.mixed_precision == "bf16";
  if (config.debug.deterministic) at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/false);
  if (config.debug.anomaly_detection) torch::autograd::AnomalyMode::set_enabled(true);

  vocab_size = resolve_vocab_size(resolved);
  // local_batch_size = auto: resolved once, here, before the run's model is
  // built; everything after (batches, accumulation, the CUDA graph, the config
  // hash the ranks compare, checkpoints) sees the size it resolved to.
  if (config.training.auto_local_batch()) {
    resolved.config.training.local_batch_size =
        resolve_auto_local_batch(resolved, world, vocab_size, world.is_rank0() ? peek_saved_local_batch() : 0, log);
    config::check_world_size(resolved, world.size);
  }
  accumulation = config::accumulation_steps(config, world.size);
  if (!config.data.task.empty()) {
    const data::TaskSpec spec = task_spec(config.data, Split::kTrain);
    answer_tokens = data::task_vocabulary(spec.task, spec.options).classes;
  }
  model = build_model(resolved, vocab_size, device);
  model->train();
  parameters = model->parameters();
  optimizer = make_adamw(*model, config.optimizer);
  batches = open_split(resolved, "train",
                       [&] { return make_train_batches(config, vocab_size, device, world.rank, world.size); });
  // The validation shards are read once here, before step 1: a split that
  // cannot fill a batch or holds a token outside the vocabulary stops the run
  // now, not at the first validation after the training it wasted. (A task's
  // batches are generated: nothing to check.)
  validation_config = config;
  if (config.validation.every > 0 && config.data.task.empty()) {
    const auto open_validation = [&] {
      return open_split(resolved, "val", [&] {
        return make_validation_batches(validation_config, vocab_size, device, world.rank, world.size);
      });
    };
    std::unique_ptr<BatchSource> validation;
    try {
      validation = make_validation_batches(validation_config, vocab_size, device, world.rank, world.size);
    } catch (const data::TooFewWindows& e) {
      // Too few windows for one global batch (a small split at a long
      // context): each validation takes the windows there are, one batch a
      // rank. Fewer than one a rank is the config error open_split names.
      const std::int64_t per_rank = std::min(config.training.local_batch_size, e.windows / world.size);
      if (per_rank < 1) open_validation();  // throws the located config error
      validation_config.training.local_batch_size = per_rank;
      validation_config.training.global_batch_size = per_rank * world.size;
      validation_config.validation.steps = 1;
      log << "validation: data.val_shards holds " << e.windows << " windows of data.seq_len + 1 tokens, fewer than "
          << "a batch of " << e.global_batch << "; each validation takes " << per_rank * world.size << " of them ("
          << per_rank << " a rank)\n";
      validation = open_validation();
    }
    for (std::int64_t i = validation_batches_per_rank(validation_config, world.size); i > 0; --i) validation->next();
  }
  tokens_per_step = accumulation * config.training.local_batch_size * train_context(config) * world.size;
  if (world.distributed()) {
    // The reducer all-reduces a bucket once its gradients are queued, on one
    // stream; the wavefront writes them on a stream per block.
    if (config.model.wavefront_chunks > 1)
      throw resolved.error_at({"model.wavefront_chunks"},
                              "model.wavefront_chunks = " + std::to_string(config.model.wavefront_chunks) +
                                  " does not run data parallel yet (each block's gradients come on its own "
                                  "stream); set 0 or 1, or train on one rank");
    // Every rank must build the same model from the same resolved config.
    std::int64_t parameter_count = 0;
    for (const auto& p : parameters) parameter_count += p.numel();
    distributed::check_ranks_agree(*world.comm, parameter_count, config::config_hash(config));
    std::vector<std::string> names;
    for (const auto& item : model->named_parameters()) names.push_back(item.key());
    distributed::BucketOptions buckets;
    buckets.bucket_bytes = std::max<std::int64_t>(1, std::llround(config.parallelism.bucket_size_mb * (1 << 20)));
    buckets.first_bucket_bytes = std::min<std::int64_t>(buckets.bucket_bytes, 1 << 20);
    reducer = std::make_unique<distributed::Reducer>(parameters, names, world.comm, buckets);
  }
  flops_per_token = model->training_flops_per_token(train_context(config));
  peak_flops = device_peak(device, bf16, &device_name);
  choose_step_mode();
}

// training.cuda_graph: a graph where the step can be one (auto), or must be (on).
void Trainer::Impl::choose_step_mode() {
  const std::string& mode = config.training.cuda_graph;
  if (mode == "off") return;
  const std::string why_not = cuda_graph_blocker(config, device);
  if (!why_not.empty()) {
    if (mode == "on") throw resolved.error_at({"training.cuda_graph"}, "training.cuda_graph = on, but " + why_not);
    if (device.is_cuda()) log << "cuda graph: off (" << why_not << ")\n";
    return;
  }
  DeviceStepOptions& options = device_step_options.emplace();
  options.bf16 = bf16;
  options.grad_clip = config.training.grad_clip;
  options.graph = true;
  options.reducer = reducer.get();
  options.allreduce_in_graph = config.parallelism.allreduce_in_graph;
  options.notice = [this](const std::string& line) { log << line << std::endl; };
}

namespace {
// The error of a run whose folder holds checkpoints, none of them usable.
std::string no_usable_checkpoint_message(const fs::path& folder, const std::vector<SkippedCheckpoint>& skipped) {
  std::string text = "no usable checkpoint in " + folder.string() + ":";
  for (const SkippedCheckpoint& s : skipped) text += "\n  " + s.entry.path.filename().string() + ": " + s.reason;
  return text +
         "\nNothing was changed. To start this run over, pass --checkpoint.resume=none (the unusable checkpoints "
         "are kept, renamed to step_N.invalid-K); to continue from another checkpoint, pass "
         "--checkpoint.resume=PATH (a step_N directory).";
}
}  // namespace

// Rank 0 alone decides (it may move unusable checkpoints aside); the others
// load what it chose.
std::optional<fs::path> Trainer::Impl::choose_resume_source(bool* verified) {
  const std::string& resume = config.checkpoint.resume;
  std::optional<fs::path> source;
  if (resume == "latest") {
    for (const fs::path& removed : folder.remove_stale_staging())
      log << "removed " << removed.string() << " (left by an interrupted save)\n";
    std::vector<SkippedCheckpoint> skipped;
    if (const auto latest = folder.latest_valid(&skipped)) {
      source = latest->path;
      *verified = true;  // latest_valid() checked the checksums already
    } else if (!skipped.empty()) {
      // Every checkpoint fails its check (or has no manifest, which a save
      // never leaves: it renames its directory into place after writing the
      // manifest): starting over would silently throw away the run. The user
      // decides; nothing is moved.
      throw std::runtime_error(no_usable_checkpoint_message(folder.path(), skipped));
    }
    // Newer but unusable: set aside, so that saves and keep-last-k see only
    // the checkpoints this run continues.
    for (const SkippedCheckpoint& s : skipped)
      log << "skipping " << s.entry.path.string() << ": " << s.reason << "; moved to "
          << folder.set_aside(s.entry.path).string() << "\n";
  } else if (resume != "none") {
    source = fs::path(resume);
  }
  if (!source && config.checkpoint.enable) {
    // resume = none: an earlier run's usable checkpoints are never trained
    // over; unusable ones (every one failing its check) are set aside.
    std::vector<SkippedCheckpoint> skipped;
    if (const auto usable = folder.latest_valid(&skipped))
      throw std::runtime_error("checkpoint.resume is none, but " + folder.path().string() +
                               " holds checkpoints of an earlier run (newest usable: " +
                               usable->path.filename().string() +
                               "); resume them (checkpoint.resume = latest), move them away, or set another "
                               "job.dump_folder");
    for (const SkippedCheckpoint& s : skipped)
      log << "starting over: the unusable " << s.entry.path.string() << " (" << s.reason << ") moved to "
          << folder.set_aside(s.entry.path).string() << "\n";
  }
  return source;
}

void Trainer::Impl::resume() {
  const std::string& resume = config.checkpoint.resume;
  bool verified = false;
  std::optional<fs::path> source;
  if (world.is_rank0()) source = choose_resume_source(&verified);
  if (world.distributed()) {
    const std::string chosen = distributed::broadcast_string(*world.comm, source ? source->string() : "");
    if (!world.is_rank0()) {
      if (!chosen.empty()) source = fs::path(chosen);
      verified = true;  // rank 0 has verified it before broadcasting
    }
  }
  if (!source) {
    log << "starting from scratch (no checkpoint in " << folder.path().string() << ")\n";
    if (const std::int64_t dropped = metrics.start_over())
      log << "metrics: dropped the " << dropped << " records in " << metrics.path()
          << " of an earlier start that left no checkpoint (this run trains from step 0)\n";
    return;
  }
  const CheckpointContents contents = load_checkpoint(*source, config, *model, optimizer.get(), verified);
  progress = contents.progress;
  check_resume_layout();
  restore_data_stream(*source);
  keep_cpu_threads();
  guard.restore(progress.nonfinite_in_row, progress.nonfinite_total);
  last_saved_step = progress.step;
  log << "resumed from " << source->string() << " at step " << progress.step << " (" << progress.tokens_seen
      << " tokens seen)\n";
  if (const std::int64_t dropped = metrics.drop_after(progress.step))
    log << "metrics: dropped " << dropped << " records of steps after " << progress.step
        << " (trained again from this checkpoint)\n";
  for (const std::string& change : config_changes(contents.config, config))
    log << "  config changed since that checkpoint: " << change << "\n";
  // An explicitly named checkpoint may be older than the run's newest: saving
  // on from it would mix two runs in one folder. (With "latest", newer ones
  // exist only if they failed verification; save() sets them aside.)
  if (world.is_rank0() && config.checkpoint.enable && resume != "latest") {
    for (const CheckpointEntry& entry : folder.complete()) {
      if (entry.step <= progress.step) continue;
      try {
        verify_manifest(entry.path, /*check_contents=*/false);
      } catch (const std::exception&) {
        continue;
      }
      throw std::runtime_error("resuming " + source->string() + " at step " + std::to_string(progress.step) +
                               " would mix its run with the newer checkpoint " + entry.path.string() +
                               "; resume that one, or set another job.dump_folder");
    }
  }
}

// A CPU run's sums split over its intra-op threads, so another thread count
// gives other roundings from the first step on: a resume keeps the
// checkpoint's count, unless OMP_NUM_THREADS names one (then it says the run
// will not be bitwise the uninterrupted one).
void Trainer::Impl::keep_cpu_threads() {
  const std::int64_t saved = progress.cpu_threads, now = at::get_num_threads();
  if (!device.is_cpu() || saved <= 0 || saved == now) return;
  if (const char* chosen = std::getenv("OMP_NUM_THREADS"); chosen && *chosen) {
    log << "warning: cpu threads: " << now << " (OMP_NUM_THREADS), the checkpoint's run had " << saved
        << "; sums round differently, so this resume is not bitwise the uninterrupted run\n";
    return;
  }
  at::set_num_threads(int(saved));
  log << "cpu threads: " << saved << ", the checkpoint's (this machine's default is " << now
      << "): the same count keeps the resume bitwise (OMP_NUM_THREADS overrides)\n";
}

// The checkpoint's place in the training data, or (checkpoint.resume_data =
// false) the start of this config's stream. A stream of other settings cannot
// be continued: the error names the key that changed and both ways forward.
void Trainer::Impl::restore_data_stream(const fs::path& source) {
  if (!config.checkpoint.resume_data) {
    log << "data: drawn afresh from the start of the training stream (checkpoint.resume_data = false); "
           "weights, optimizer state and step continue from the checkpoint\n";
    return;
  }
  try {
    batches->restore(progress.data_cursor);
  } catch (const DataStreamMismatch& m) {
    throw resolved.error_at({m.key, "checkpoint.resume_data"},
                            m.key + " is " + m.now + " here, but the checkpoint " + source.string() +
                                " drew its training data with " + m.key + " = " + m.saved + ": set it" +
                                " back to continue the run exactly, or set checkpoint.resume_data = false to "
                                "keep its weights, optimizer state and step and draw the data afresh");
  }
}

void Trainer::Impl::check_resume_layout() {
  const BatchLayout now{world.size, config.training.local_batch_size, accumulation};
  std::optional<std::int64_t> position;
  const nlohmann::json& cursor = progress.data_cursor;
  if (cursor.is_object() && cursor.value("kind", "") == "shards")
    position = cursor.at("loader").at("windows_consumed").get<std::int64_t>();
  // Checkpoints from before data parallelism do not know their batch layout.
  const BatchLayout saved = progress.local_batch_size > 0
                                ? BatchLayout{progress.world_size, progress.local_batch_size, progress.accumulation}
                                : now;
  for (const std::string& note : plan_resume_layout(saved, now, position)) log << "  " << note << "\n";
}

// The local batch size of the checkpoint resume() will most likely load: the
// newest complete one (latest) or the one named; 0 when there is none or it
// does not say. Only a preference for local_batch_size = auto (resume() still
// checks the layout of what it loads), so nothing is verified or moved here.
std::int64_t Trainer::Impl::peek_saved_local_batch() const {
  const std::string& resume = config.checkpoint.resume;
  if (resume == "none") return 0;
  if (resume != "latest") return saved_local_batch_size(fs::path(resume));
  const std::vector<CheckpointEntry> complete = folder.complete();
  return complete.empty() ? 0 : saved_local_batch_size(complete.back().path);
}

// Every rank stops at the same step: on the largest signal any rank received,
// or when any was asked to stop.
int Trainer::Impl::agreed_stop_signal(bool* stop) {
  std::int64_t signal = stop_signal_received();
  bool requested = stop_requested;
  if (world.distributed()) {
    const std::vector<std::int64_t> agreed =
        distributed::max_over_ranks(*world.comm, {signal, requested ? 1 : 0});
    signal = agreed[0];
    requested = agreed[1] > 0;
  }
  *stop = signal != 0 || requested;
  return static_cast<int>(signal);
}

void Trainer::Impl::report_start() {
  std::ostringstream kinds;
  for (std::int64_t i = 0; i < config.model.n_layers; ++i) kinds << (i ? "," : "") << config.model.layer_kind(i);
  log << "flashtrain: " << config.job.name << " (config " << config::config_hash(config) << ")\n"
      << "device: " << device.str() << (device_name.empty() ? "" : " (" + device_name + ")")
      << (device.is_cpu() ? " with " + std::to_string(at::get_num_threads()) + " threads" : "")
      << ", precision " << config.training.mixed_precision << "\n"
      << "model: " << kinds.str() << ", dim " << config.model.dim << ", vocab " << vocab_size << ", "
      << format_rate(flops_per_token).c_str() << " training FLOPs/token\n"
      << models::format_parameter_counts(models::count_parameters_by_group(*model)) << "data: "
      << batches->describe() << "\n"
      << "batch: " << config.training.local_batch_size << " x " << train_context(config) << " tokens x "
      << accumulation << " accumulation" << (world.distributed() ? " x " + std::to_string(world.size) + " ranks" : "")
      << " = " << tokens_per_step << " tokens per step; " << config.training.steps << " steps\n";
  if (world.distributed())
    log << "data parallel: " << world.size << " ranks (" << world.comm->backend_name() << "), "
        << reducer->plan().buckets.size() << " gradient buckets of up to " << config.parallelism.bucket_size_mb
        << " MiB; rank 0 logs and writes checkpoints\n";
  if (metrics.enabled()) log << "metrics: " << metrics.path() << "\n";
  // A model this size on the CPU takes hours a step count a GPU does in
  // minutes; "auto" fell back without the user asking for it.
  std::int64_t parameter_count = 0;
  for (const auto& p : parameters) parameter_count += p.numel();
  if (config.training.device == "auto" && device.is_cpu() && parameter_count >= kLargeForTheCpu)
    log << "warning: training.device = auto found no GPU, so this " << std::fixed << std::setprecision(1)
        << double(parameter_count) / 1e6 << std::defaultfloat
        << "M-parameter model trains on the CPU, which is slow for its size; set training.device = cpu to "
           "train here anyway, or run on a machine with a GPU\n";
}

// The global batch's micro-batches on this rank, and their scored tokens.
std::vector<Batch> Trainer::Impl::next_micro_batches(std::int64_t* scored) {
  std::vector<Batch> micro_batches;
  for (std::int64_t i = 0; i < accumulation; ++i) {
    micro_batches.push_back(batches->next());
    *scored += micro_batches.back().scored_tokens;
  }
  return micro_batches;
}

// Runs one step (the eager loop) or queues it (the device step): its report
// comes out of take_finished().
void Trainer::Impl::train_step() {
  StepReport report;
  report.step = progress.step + 1;
  report.lr = schedule.at(report.step);
  set_learning_rate(*optimizer, report.lr);  // what a checkpoint records; the device step takes report.lr
  if (device_step_options) return device_train_step(report);
  if (reducer) reducer->zero_grad();  // optimizer.zero_grad cannot detach the bucket views
  else optimizer->zero_grad(/*set_to_none=*/true);

  // The whole global batch first: its scored tokens normalise every micro-batch's loss.
  std::int64_t scored = 0;
  std::vector<Batch> micro_batches = next_micro_batches(&scored);
  // Data parallel: the Reducer averages gradients over ranks, so each rank
  // divides by the global scored count over the world size; the sum over
  // ranks is then that of one big batch normalised by all its scored tokens.
  double normaliser = double(std::max<std::int64_t>(scored, 1));
  if (world.distributed()) {
    scored = std::int64_t(distributed::sum_over_ranks(*world.comm, {double(scored)})[0]);
    normaliser = double(std::max<std::int64_t>(scored, 1)) / double(world.size);
  }
  torch::Tensor loss_sum = torch::zeros({}, torch::TensorOptions(torch::kDouble).device(device));
  for (std::size_t i = 0; i < micro_batches.size(); ++i) {
    const Batch& batch = micro_batches[i];
    // Only the last micro-step's backward communicates.
    if (reducer) reducer->prepare_for_backward(/*sync=*/i + 1 == micro_batches.size());
    const torch::Tensor loss = summed_token_loss(forward_logits(*model, batch.inputs, bf16), batch.targets);
    (loss / normaliser).backward();
    loss_sum += loss.detach().to(torch::kDouble);
  }
  if (reducer) reducer->wait_all();
  double total_loss = loss_sum.item<double>();
  if (world.distributed()) total_loss = distributed::sum_over_ranks(*world.comm, {total_loss})[0];
  report.loss = scored > 0 ? total_loss / double(scored) : std::nan("");
  report.grad_norm = clip_grad_norm(parameters, config.training.grad_clip);
  const bool finite = std::isfinite(report.loss) && std::isfinite(report.grad_norm);
  if (guard.record(finite)) {
    optimizer->step();
  } else {
    report.skipped = true;
    if (reducer) reducer->zero_grad();
    else optimizer->zero_grad(/*set_to_none=*/true);
  }
  finished_steps.push_back({finish_step(report), /*counted_in_guard=*/true});
}

StepReport Trainer::Impl::finish_step(StepReport report) {
  progress.step = report.step;
  progress.tokens_seen += tokens_per_step;
  report.tokens_seen = progress.tokens_seen;
  return report;
}

// The same step as device work (device_step.h); data parallel, the device
// step sums over the ranks itself (the scored tokens, gradients and loss).
void Trainer::Impl::device_train_step(StepReport report) {
  if (!device_step) {
    device_step = std::make_unique<DeviceStep>(*model, *optimizer, *device_step_options);
    log << "cuda graph: the step is captured after " << DeviceStep::kEagerSteps
        << " eager steps and replayed (training.cuda_graph = " << config.training.cuda_graph << ")";
    if (reducer)
      log << "; the gradient all-reduce "
          << (config.parallelism.allreduce_in_graph ? "inside the graph, overlapping backward"
                                                    : "between a graph of forward+backward and one of the update")
          << " (parallelism.allreduce_in_graph = " << (config.parallelism.allreduce_in_graph ? "true" : "false")
          << ")";
    log << "\n";
  }
  std::int64_t scored = 0;
  std::vector<Batch> micro_batches = next_micro_batches(&scored);
  device_step->enqueue(micro_batches, scored, report.lr);
  queued_steps.push_back(finish_step(report));
}

// The reports of the steps run so far, in order. The device step's numbers are
// read back only when `wait` (one host sync for all queued steps).
std::vector<FinishedStep> Trainer::Impl::take_finished(bool wait) {
  if (wait && !queued_steps.empty()) {
    const std::vector<DeviceStepResult> results = device_step->collect();
    for (std::size_t i = 0; i < results.size(); ++i) {
      StepReport& report = queued_steps[i];
      const double scored = results[i].scored_tokens;
      report.loss = scored > 0 ? results[i].loss_sum / scored : std::nan("");
      report.grad_norm = results[i].grad_norm;
      // The device skipped the update already; the run counts it in the guard.
      report.skipped = results[i].skipped || !std::isfinite(report.loss);
      finished_steps.push_back({report, /*counted_in_guard=*/false});
    }
    queued_steps.clear();
  }
  return std::exchange(finished_steps, {});
}

void Trainer::Impl::log_progress(const StepReport& r) {
  const double tokens_per_second = double(window_steps * tokens_per_step) / std::max(window_seconds, 1e-9);
  ProgressLine line;
  line.step = r.step;
  line.total_steps = config.training.steps;
  line.loss = r.loss;
  line.lr = r.lr;
  line.grad_norm = r.grad_norm;
  line.tokens_per_second = tokens_per_second;
  line.eta_seconds = double(config.training.steps - r.step) * window_seconds / double(std::max<std::int64_t>(window_steps, 1));
  // tokens/s counts every rank; the peak is one GPU's.
  if (peak_flops) line.mfu = flops_per_token * tokens_per_second / (*peak_flops * world.size);
  if (device.is_cuda()) {
    // The peak since the previous line (the allocator's peak is reset below)
    // of the tensors outside a graph, and the graph's pool, which replays use
    // without the allocator seeing it.
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
    const std::int64_t graph_pool = device_step ? device_step->graph_pool_bytes() : 0;
    line.memory_gib = double(stats.allocated_bytes[0].peak + graph_pool) / double(1 << 30);  // [0]: all pools
    c10::cuda::CUDACachingAllocator::resetPeakStats(device.index());
  }
  line.skipped_steps = guard.total();
  log << format_progress_line(line) << std::endl;

  nlohmann::json record = {{"kind", "train"},         {"step", r.step},
                           {"loss", r.loss},          {"lr", r.lr},
                           {"grad_norm", r.grad_norm}, {"tokens_seen", r.tokens_seen},
                           {"tokens_per_second", tokens_per_second},
                           {"elapsed_seconds", seconds_since(run_start)},
                           {"skipped_steps", guard.total()}};
  if (line.mfu) record["mfu"] = *line.mfu;
  if (reducer && device_step) {
    // The device step's all-reduces run without the host: only their size is known.
    std::int64_t bytes = 0;
    for (const distributed::Bucket& bucket : reducer->plan().buckets) bytes += bucket.bytes();
    record["allreduce_bytes"] = bytes;
  } else if (reducer) {
    // Per step over the steps since the last line: all-reduce time, the part
    // of it exposed (waited for after backward), and the share hidden.
    const distributed::ReducerStats stats = reducer->take_stats();
    const double n = double(std::max<std::int64_t>(stats.sync_steps, 1));
    record["comm_wait_seconds"] = stats.wait_seconds / n;
    record["backward_tail_seconds"] = stats.backward_tail_seconds / n;
    if (stats.timed_collectives > 0) record["comm_seconds"] = stats.comm_seconds / n;
    if (const auto overlap = stats.overlap()) record["comm_overlap"] = *overlap;
    record["allreduce_bytes"] = stats.bytes / std::max<std::int64_t>(stats.sync_steps, 1);
  }
  if (line.memory_gib) record["peak_memory_gib"] = *line.memory_gib;
  metrics.write(record);
  window_seconds = 0.0;
  window_steps = 0;
}

EvalResult Trainer::Impl::evaluate_on(BatchSource& batches) {
  // Each rank evaluates its slice of the validation set; the sums over ranks
  // are those of one process evaluating all of it.
  EvalOptions options;
  options.batches = validation_batches_per_rank(validation_config, world.size);
  options.bf16 = bf16;
  options.answer_tokens = answer_tokens;
  EvalSums sums = evaluate_sums(*model, batches, options);
  if (world.distributed())
    sums = EvalSums::from_values(distributed::sum_over_ranks(*world.comm, sums.to_values()));
  return summarize(sums, int(answer_tokens.size()));
}

namespace {

// What a validation record keeps of a task's scores.
void add_task_scores(nlohmann::json& record, const EvalResult& result) {
  record["accuracy"] = *result.accuracy;
  record["scaled_accuracy"] = *result.scaled_accuracy;
  record["sequence_accuracy"] = *result.sequence_accuracy;
  record["answers_by_length"] = answers_by_length_json(result);
}

}  // namespace

EvalResult Trainer::Impl::validate() {
  const auto start = Clock::now();
  const EvalResult result =
      evaluate_on(*make_validation_batches(validation_config, vocab_size, device, world.rank, world.size));

  char text[256];
  std::snprintf(text, sizeof text, "validation at step %lld: loss %.4f | ppl %.2f",
                static_cast<long long>(progress.step), result.loss, result.perplexity);
  std::string line = text;
  nlohmann::json record = {{"kind", "val"}, {"step", progress.step}, {"loss", result.loss},
                           {"perplexity", result.perplexity}, {"scored_tokens", result.scored_tokens}};
  if (result.accuracy) {
    std::snprintf(text, sizeof text, " | accuracy %.4f | scaled accuracy %.4f", *result.accuracy,
                  *result.scaled_accuracy);
    line += text;
    add_task_scores(record, result);
  }
  if (!config.data.task.empty()) {
    // The record's own scores are the first band's (make_validation_batches'
    // "test"); every band, that one included, is also under "bands".
    nlohmann::json bands = nlohmann::json::object();
    const std::vector<TaskBand> task_bands = task_validation_bands(config.data);
    for (const TaskBand& band : task_bands) {
      const bool first = &band == &task_bands.front();
      const EvalResult scores =
          first ? result : evaluate_on(*make_task_band_batches(config, band, device, world.rank, world.size));
      nlohmann::json entry = {{"min_len", band.lengths.min_len}, {"max_len", band.lengths.max_len},
                              {"first_scored_position", band.first_scored_position}, {"loss", scores.loss},
                              {"scored_tokens", scores.scored_tokens}};
      add_task_scores(entry, scores);
      bands[band.name] = entry;
      if (!first) {
        std::snprintf(text, sizeof text, " | %s %d-%d scaled %.4f", band.name.c_str(), band.lengths.min_len,
                      band.lengths.max_len, *scores.scaled_accuracy);
        line += text;
      }
    }
    record["bands"] = bands;
  }
  std::snprintf(text, sizeof text, " (%.1f s)", seconds_since(start));
  log << line << text << std::endl;
  metrics.write(record);
  return result;
}

fs::path Trainer::Impl::save() {
  progress.data_cursor = batches->cursor();
  progress.nonfinite_in_row = guard.in_row();
  progress.nonfinite_total = guard.total();
  progress.world_size = world.size;
  progress.local_batch_size = config.training.local_batch_size;
  progress.accumulation = accumulation;
  progress.cpu_threads = device.is_cpu() ? std::int64_t(at::get_num_threads()) : 0;
  if (!world.is_rank0()) {  // the cursor is global: rank 0's checkpoint serves every rank
    last_saved_step = progress.step;
    return {};
  }
  const auto start = Clock::now();
  const fs::path directory = folder.path_for_step(progress.step);
  std::error_code error;
  if (fs::exists(directory, error)) {
    // Only an unusable directory can be in the way (an unfinished save, or one
    // that failed verification when resuming); it is set aside, never deleted.
    bool usable = true;
    try {
      verify_manifest(directory);
    } catch (const std::exception&) {
      usable = false;
    }
    if (usable) throw std::runtime_error(directory.string() + " already exists; not replacing a saved checkpoint");
    log << "moved the unusable " << directory.string() << " to " << folder.set_aside(directory).string() << "\n";
  }
  if (device_step) device_step->sync_optimizer_state();
  save_checkpoint(directory, progress, *model, *optimizer, config);
  last_saved_step = progress.step;
  last_checkpoint = directory;
  char text[64];
  std::snprintf(text, sizeof text, " (%.1f s)", seconds_since(start));
  log << "checkpoint: " << directory.string() << text << "\n";
  for (const fs::path& removed : folder.prune(config.checkpoint.keep_last))
    log << "removed " << removed.string() << " (checkpoint.keep_last = " << config.checkpoint.keep_last << ")\n";
  metrics.write({{"kind", "event"}, {"event", "checkpoint"}, {"step", progress.step}, {"path", directory.string()}});
  return directory;
}

Trainer::Trainer(const config::ResolvedConfig& resolved, std::ostream& log)
    : Trainer(resolved, log, single_process_world(resolved)) {}

Trainer::Trainer(const config::ResolvedConfig& resolved, std::ostream& log, World world)
    : impl_(std::make_unique<Impl>(resolved, log, std::move(world))) {
  impl_->build();
  impl_->report_start();
  impl_->resume();
  // Rank 0's weights everywhere (fresh runs initialise alike already; this
  // makes it certain, and cheap next to training).
  if (impl_->world.distributed()) distributed::broadcast_parameters(*impl_->world.comm, impl_->parameters);
}

Trainer::~Trainer() = default;

void Trainer::set_step_callback(std::function<void(const StepReport&)> callback) {
  impl_->callback = std::move(callback);
}

void Trainer::request_stop() { impl_->stop_requested = true; }

models::LanguageModelImpl& Trainer::model() { return *impl_->model; }

std::int64_t Trainer::step() const { return impl_->progress.step; }

// What one finished step's report sets off: its log lines, the callback, the
// guard, validation and checkpoints. False: the run ends here.
bool Trainer::Impl::act_on(FinishedStep finished, StepProfiler& profiler, TrainResult& result) {
  StepReport& report = finished.report;
  if (!finished.counted_in_guard) report.skipped = !guard.record(!report.skipped);
  if (const auto summary = profiler.after_step(report.step)) log << *summary;
  if (report.skipped)
    log << "step " << report.step << ": non-finite loss (" << report.loss << ") or gradient norm ("
        << report.grad_norm << "); update skipped (" << guard.in_row() << " in a row, stop at "
        << guard.max_in_row() << ")" << std::endl;
  if (callback) callback(report);
  window_loss_sum += report.loss;
  ++window_loss_steps;
  bool reached_target = false;
  if (is_log_step(config, report.step)) {
    log_progress(report);
    const double window_loss = window_loss_sum / double(window_loss_steps);
    reached_target = config.training.target_loss > 0 && window_loss <= config.training.target_loss;
    if (reached_target) {
      log << "training loss " << window_loss << " over the last " << window_loss_steps
          << " steps is at most training.target_loss = " << config.training.target_loss << ": stopping at step "
          << report.step << "\n";
      metrics.write({{"kind", "event"}, {"event", "target_loss"}, {"step", report.step}, {"loss", window_loss}});
    }
    window_loss_sum = 0.0;
    window_loss_steps = 0;
  }
  if (guard.exhausted()) {
    log << "stopping: " << guard.in_row() << " steps in a row up to step " << report.step
        << " had a non-finite loss or gradient (training.max_nonfinite_steps = " << guard.max_in_row()
        << "); no checkpoint written\n";
    result.status = TrainStatus::kNonfinite;
    return false;
  }
  const bool last = report.step == config.training.steps || reached_target;
  // The checkpoint before the validation: a run stopped or killed during a
  // long validation has lost nothing (resumed at the end, it validates).
  if (is_checkpoint_step(config, report.step) || (config.checkpoint.enable && last)) save();
  if (config.validation.every > 0 && (report.step % config.validation.every == 0 || last)) {
    result.last_validation = validate();
  }
  if (reached_target) {
    result.status = TrainStatus::kReachedTarget;
    return false;
  }
  return true;
}

TrainResult Trainer::run() {
  Impl& s = *impl_;
  const config::Config& c = s.config;
  TrainResult result;
  s.run_start = Clock::now();
  const std::int64_t first_step = s.progress.step;
  if (s.progress.step >= c.training.steps)
    s.log << "nothing to train: at step " << s.progress.step << " of training.steps = " << c.training.steps << "\n";
  if (s.progress.step == 0) s.metrics.write({{"kind", "event"}, {"event", "start"}, {"config_hash", config::config_hash(c)}});
  else s.metrics.write({{"kind", "event"}, {"event", "resume"}, {"step", s.progress.step}});
  // Resumed at the last step: the final validation (saved before it, the run
  // may have stopped during it).
  if (s.progress.step > 0 && s.progress.step == c.training.steps && c.validation.every > 0)
    result.last_validation = s.validate();

  // training.profile_steps: after three steps of this run (warm-up, graph
  // capture), or from the first when the run is shorter; rank 0 only.
  const std::int64_t profile_first = first_step + 4 <= c.training.steps ? first_step + 4 : first_step + 1;
  const std::int64_t profiled_steps = std::min(c.training.profile_steps, c.training.steps - profile_first + 1);
  const std::int64_t profile_steps = s.world.is_rank0() ? profiled_steps : 0;
  StepProfiler profiler(profile_first, std::max<std::int64_t>(profile_steps, 0),
                        fs::path(c.job.dump_folder) / "profile", s.device.is_cuda());

  // A queued device step's numbers are read back where a report is needed:
  // a log, validation or checkpoint step, the last step, the last profiled
  // step (the profiler stops there; the ones before it run as unprofiled
  // steps do), a step callback, or every kMostQueuedSteps. The same steps on
  // every rank (they agree on stopping after them).
  const auto report_due = [&](std::int64_t step) {
    return s.callback || is_log_step(c, step) || (c.validation.every > 0 && step % c.validation.every == 0) ||
           is_checkpoint_step(c, step) || (profiled_steps > 0 && step == profile_first + profiled_steps - 1) ||
           std::int64_t(s.queued_steps.size()) >= kMostQueuedSteps;
  };
  const auto finish_all = [&](bool wait) {
    for (FinishedStep& step : s.take_finished(wait))
      if (!s.act_on(std::move(step), profiler, result)) return false;
    return true;
  };

  while (s.progress.step < c.training.steps) {
    // Ranks agree on stopping through a collective, which must not run beside
    // the all-reduces of queued device steps: they agree where none is queued
    // (after every report_due step, the same steps on every rank).
    bool stop = false;
    const int signal = s.world.distributed() && !s.queued_steps.empty() ? 0 : s.agreed_stop_signal(&stop);
    if (stop) {
      if (!finish_all(/*wait=*/true)) break;
      s.log << (signal ? "received signal " + std::to_string(signal) : std::string("stop requested"))
            << " at step " << s.progress.step
            << (c.checkpoint.enable ? "; saving a checkpoint" : " (checkpoint.enable = false: nothing saved)") << "\n";
      result.status = TrainStatus::kStopped;
      result.stop_signal = signal;
      if (c.checkpoint.enable && s.last_saved_step != s.progress.step) s.save();
      break;
    }
    profiler.before_step(s.progress.step + 1);
    const auto step_start = Clock::now();
    s.train_step();
    std::vector<FinishedStep> finished = s.take_finished(report_due(s.progress.step));
    s.window_seconds += seconds_since(step_start);  // with the wait for queued steps
    ++s.window_steps;
    bool go_on = true;
    for (FinishedStep& step : finished)
      if (!(go_on = s.act_on(std::move(step), profiler, result))) break;
    if (!go_on) break;
  }
  // No rank leaves while rank 0 still saves (and the communicators shut down
  // with every rank present).
  if (s.world.distributed()) s.world.comm->finish();
  result.step = s.progress.step;
  result.last_checkpoint = s.last_checkpoint;
  if (result.status == TrainStatus::kFinished && s.progress.step > first_step)
    s.log << "done: step " << s.progress.step << ", " << s.progress.tokens_seen << " tokens in "
          << format_duration(seconds_since(s.run_start)) << "\n";
  return result;
}

}  // namespace flashtrain::trainer

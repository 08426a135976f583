#include "flashtrain/trainer/cli/commands.h"

#include <c10/util/Logging.h>

#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <streambuf>

#include "flashtrain/config/config_error.h"
#include "flashtrain/distributed/environment.h"
#include "flashtrain/distributed/watched_wait.h"

#include "flashtrain/data/tokenizer.h"
#include "flashtrain/trainer/batch/batch_probe.h"
#include "flashtrain/trainer/batch/batch_source.h"
#include "flashtrain/trainer/run/evaluator.h"
#include "flashtrain/trainer/checkpoint/exporter.h"
#include "flashtrain/trainer/run/model_factory.h"
#include "flashtrain/trainer/cli/sampler.h"
#include "flashtrain/trainer/run/stop_signal.h"
#include "flashtrain/trainer/batch/task_setup.h"
#include "flashtrain/trainer/run/trainer.h"
#include "flashtrain/trainer/checkpoint/training_checkpoint.h"
#include "flashtrain/trainer/run/world.h"

namespace flashtrain::trainer {
namespace {

// torch's errors carry a C++ backtrace in what(); users get the message only.
template <typename Body>
int without_torch_backtraces(Body body) {
  try {
    return body();
  } catch (const c10::Error& e) {
    throw std::runtime_error(e.what_without_backtrace());
  }
}

struct LoadedModel {
  models::LanguageModel model{nullptr};
  CheckpointContents contents;
  std::filesystem::path checkpoint;
  torch::Device device{torch::kCPU};
  std::int64_t vocab_size = 0;
};

LoadedModel load_trained_model(const config::ResolvedConfig& resolved, const CommandLine& command) {
  LoadedModel loaded;
  loaded.device = resolve_device(resolved);
  loaded.vocab_size = resolve_vocab_size(resolved);
  loaded.model = build_model(resolved, loaded.vocab_size, loaded.device);
  loaded.checkpoint = choose_checkpoint(resolved.config, command.checkpoint, std::cerr);
  loaded.contents = load_checkpoint(loaded.checkpoint, resolved.config, *loaded.model, nullptr);
  return loaded;
}

}  // namespace

namespace {

// Where ranks other than 0 write their log: nowhere.
class NullBuffer : public std::streambuf {
 protected:
  int overflow(int c) override { return c; }
};

int train_status(const TrainResult& result) {
  switch (result.status) {
    case TrainStatus::kFinished:
    case TrainStatus::kReachedTarget:
      return 0;
    case TrainStatus::kStopped:
      return result.stop_signal ? 128 + result.stop_signal : 0;
    case TrainStatus::kNonfinite:
      return 1;
  }
  return 1;
}

// One rank of a data-parallel run. Any error ends the process at once with
// std::_Exit, the trainer left undestroyed: the other ranks may be inside a
// collective with this one, and tearing down the NCCL communicators can block
// on them, as can freeing a CUDA graph's memory (it waits for the device, whose
// stream may be stuck in an all-reduce with a gone rank). The others notice
// this rank is gone and exit too.
int run_rank(const config::ResolvedConfig& resolved, const distributed::Environment& env,
             const distributed::EnvMap& vars) {
  NullBuffer null_buffer;
  std::ostream null_log(&null_buffer);
  std::ostream& log = env.rank == 0 ? std::cout : null_log;
  // torch's store client logs a lost connection as a warning with a stack
  // trace; the error this rank reports names the lost rank instead.
  // TORCH_CPP_LOG_LEVEL, when set, keeps its say.
  if (!std::getenv("TORCH_CPP_LOG_LEVEL")) FLAGS_caffe2_log_level = 2;  // errors only
  int status = 1;
  std::unique_ptr<Trainer> trainer;  // outside the try: unwinding would destroy it
  try {
    trainer = std::make_unique<Trainer>(resolved, log, make_world(resolved, env, vars, log));
    const TrainResult result = trainer->run();
    if (result.status == TrainStatus::kStopped && env.rank == 0)
      std::cout << "stopped at step " << result.step
                << (result.last_checkpoint.empty() ? "" : "; saved " + result.last_checkpoint.string())
                << "; the same command continues from there\n";
    status = train_status(result);
    trainer.reset();  // a run that ended normally shuts its communicators down cleanly
  } catch (const distributed::CommunicationError& e) {
    std::cerr << "flashtrain: error: " << e.what() << std::endl;  // the message names the rank
  } catch (const config::ConfigError& e) {
    std::cerr << (e.file().empty() ? "flashtrain: " : "") << "[rank " << env.rank << "] " << e.what() << std::endl;
    status = config::kConfigErrorExitCode;
  } catch (const c10::Error& e) {
    std::cerr << "flashtrain: [rank " << env.rank << "] error: " << e.what_without_backtrace() << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "flashtrain: [rank " << env.rank << "] error: " << e.what() << std::endl;
  }
  std::cout.flush();
  std::cerr.flush();
  std::_Exit(status);
}

// The whole of a text file; a runtime error naming it when it cannot be read.
std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read the prompt file '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw std::runtime_error("cannot read the prompt file '" + path + "'");
  return text.str();
}

}  // namespace

int run_train(const config::ResolvedConfig& resolved) {
  const distributed::EnvMap vars = distributed::current_environment();
  const distributed::Environment env = distributed::parse_environment(vars);
  if (env.is_distributed()) {
    StopSignalHandlers handlers;
    return run_rank(resolved, env, vars);
  }
  return without_torch_backtraces([&] {
    StopSignalHandlers handlers;
    Trainer trainer(resolved, std::cout, make_world(resolved, env, vars, std::cout));
    const TrainResult result = trainer.run();
    if (result.status == TrainStatus::kStopped)
      std::cout << "stopped at step " << result.step
                << (result.last_checkpoint.empty() ? "" : "; saved " + result.last_checkpoint.string())
                << "; the same command continues from there\n";
    return train_status(result);
  });
}

int run_eval(const config::ResolvedConfig& resolved, const CommandLine& command) {
  return without_torch_backtraces([&] {
    LoadedModel loaded = load_trained_model(resolved, command);
    config::Config c = resolved.config;
    // local_batch_size = auto: the size the training run resolved it to (its
    // validation set's rows depend on it when global_batch_size is 0), else
    // the CPU's rule.
    if (c.training.auto_local_batch())
      c.training.local_batch_size = loaded.contents.progress.local_batch_size > 0
                                        ? loaded.contents.progress.local_batch_size
                                        : cpu_auto_local_batch(global_batch_per_rank(c, 1));
    const std::unique_ptr<BatchSource> batches = make_validation_batches(c, loaded.vocab_size, loaded.device);
    EvalOptions options;
    options.batches = validation_batches_per_rank(c, /*world_size=*/1);  // the training run's validation set
    options.bf16 = c.training.mixed_precision == "bf16";
    if (!c.data.task.empty()) {
      const data::TaskSpec spec = task_spec(c.data, Split::kValidation);
      options.answer_tokens = data::task_vocabulary(spec.task, spec.options).classes;
    }
    // A line every 10 s on long evaluations (stderr: stdout keeps the result).
    const auto start = std::chrono::steady_clock::now();
    auto next_line = start + std::chrono::seconds(10);
    options.on_batch = [&](std::int64_t done, std::int64_t total) {
      const auto now = std::chrono::steady_clock::now();
      if (now < next_line || done == total) return;
      next_line = now + std::chrono::seconds(10);
      std::fprintf(stderr, "eval: %lld/%lld batches, %.0f s\n", static_cast<long long>(done),
                   static_cast<long long>(total), std::chrono::duration<double>(now - start).count());
    };
    const EvalResult r = evaluate(*loaded.model, *batches, options);
    std::printf("%s (step %lld): loss %.4f | ppl %.2f | %lld tokens in %lld batches", loaded.checkpoint.c_str(),
                static_cast<long long>(loaded.contents.progress.step), r.loss, r.perplexity,
                static_cast<long long>(r.scored_tokens), static_cast<long long>(r.batches));
    if (r.accuracy)
      std::printf(" | accuracy %.4f | scaled accuracy %.4f | sequence accuracy %.4f", *r.accuracy,
                  *r.scaled_accuracy, *r.sequence_accuracy);
    std::printf("\n");
    if (!r.answers_by_length.empty())
      std::printf("answers by length [length, correct, total]: %s\n", answers_by_length_json(r).dump().c_str());
    return 0;
  });
}

int run_sample(const config::ResolvedConfig& resolved, const CommandLine& command) {
  return without_torch_backtraces([&] {
    const config::Config& c = resolved.config;
    if (!c.data.task.empty() || c.tokenizer.path.empty())
      throw resolved.error_at({"tokenizer.path", "data.task"},
                              "sample needs a tokenizer (tokenizer.path) to encode the prompt; task runs have none");
    const data::Tokenizer tokenizer(c.tokenizer.path);
    LoadedModel loaded = load_trained_model(resolved, command);
    std::vector<std::int32_t> prompt = tokenizer.encode(command.prompt_file.empty() ? command.prompt
                                                                                   : read_text(command.prompt_file));
    prompt.insert(prompt.begin(), tokenizer.bos_id());  // documents start with bos in the shards
    SampleOptions options;
    options.max_new_tokens = command.max_new_tokens;
    options.temperature = command.temperature;
    options.seed = command.seed;
    options.cuda_graph = command.cuda_graph;
    options.prefill_chunks = command.prefill_chunks;
    options.stop_token = tokenizer.eos_id();
    GenerationTimes times;
    const std::vector<std::int32_t> generated = generate(*loaded.model, prompt, options, &times);
    // On stderr: stdout is the text alone.
    const auto rate = [](std::size_t tokens, double seconds) {
      char text[64];
      std::snprintf(text, sizeof text, "%zu tokens in %.3f s (%.0f tok/s)", tokens, seconds,
                    seconds > 0 ? double(tokens) / seconds : 0.0);
      return std::string(text);
    };
    std::cerr << "prefill: " << rate(prompt.size(), times.prefill_seconds);
    if (times.prefill_chunks > 1) std::cerr << ", wavefront of " << times.prefill_chunks << " chunks";
    std::cerr << "; decode: " << rate(generated.size(), times.decode_seconds) << ", " << times.decode_mode;
    if (times.decode_mode == "cuda graph") {
      char captured[48];
      std::snprintf(captured, sizeof captured, " (captured in %.3f s)", times.capture_seconds);
      std::cerr << captured;
    }
    if (times.peak_memory_bytes > 0) std::cerr << "; peak GPU memory " << (times.peak_memory_bytes >> 20) << " MiB";
    std::cerr << std::endl;
    // Decoded together with the prompt: a piece's leading space survives only
    // inside a sequence.
    std::vector<std::int32_t> text(prompt.begin() + 1, prompt.end());
    for (std::int32_t token : generated)
      if (token != tokenizer.eos_id()) text.push_back(token);
    std::cout << tokenizer.decode(text) << std::endl;
    return 0;
  });
}

int run_export(const config::ResolvedConfig& resolved, const CommandLine& command) {
  return without_torch_backtraces([&] {
    LoadedModel loaded = load_trained_model(resolved, command);
    std::filesystem::path output = command.output;
    if (output.empty())
      output = std::filesystem::path(resolved.config.job.dump_folder) / "export" /
               loaded.checkpoint.filename();
    if (command.output.empty() && std::filesystem::exists(output))
      throw std::runtime_error(output.string() + " already exists (an earlier export of this checkpoint); " +
                               "pass --output DIR to export it elsewhere");
    export_model(resolved.config, *loaded.model, loaded.contents.progress, output);
    std::cout << "exported " << loaded.checkpoint.string() << " (step " << loaded.contents.progress.step << ") to "
              << output.string() << "\n";
    return 0;
  });
}

}  // namespace flashtrain::trainer

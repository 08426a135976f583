// The flashtrain command line:
//
//   flashtrain [train|eval|sample|export|tasks|tune] [--config FILE] [options] [--section.key=value ...]
//   flashtrain prepare [flashtrain-prepare's options]
//
// Parsing only; main.cpp runs the subcommand. Every problem is a UsageError
// (exit status 2, like a ConfigError).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace flashtrain::trainer {

enum class Subcommand { kTrain, kEval, kSample, kExport, kTasks, kTune, kPrepare, kHelp };

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CommandLine {
  Subcommand subcommand = Subcommand::kTrain;
  // kHelp: the subcommand whose help was asked for (`flashtrain eval --help`);
  // none for the global text.
  std::optional<Subcommand> help_topic;
  std::string config_path;  // "": the defaults
  bool print_config = false;
  // Config overrides in command-line order; --resume[=X] becomes --resume=X
  // and --nproc N --nproc=N, which the config reads as checkpoint.resume and
  // parallelism.nproc.
  std::vector<std::string> overrides;
  // eval, sample, export: the checkpoint directory ("": the run's newest valid one).
  std::string checkpoint;
  // export: the output directory ("": <job.dump_folder>/export/step_<N>).
  std::string output;
  // sample
  std::string prompt;
  std::string prompt_file;  // the prompt's text read from this file instead
  std::int64_t max_new_tokens = 64;
  double temperature = 0.0;  // 0: greedy
  std::uint64_t seed = 0;
  bool cuda_graph = true;  // replay the decode step from a CUDA graph where it can be
  std::optional<std::int64_t> prefill_chunks;  // --prefill-chunks (unset: auto)
  // tune: a device fixture (a100, h100, h200, l4) or cuda[:N] ("": the live GPU).
  std::string device;
  // prepare: its own arguments, passed through.
  std::vector<std::string> tool_args;
};

// argv[0] is skipped. Throws UsageError.
CommandLine parse_command_line(int argc, const char* const* argv);

const char* subcommand_name(Subcommand subcommand);
// The --help text: the global one, or one subcommand's (its options only).
std::string usage_text(std::optional<Subcommand> topic = std::nullopt);

}  // namespace flashtrain::trainer

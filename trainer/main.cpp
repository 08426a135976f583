// flashtrain: train recurrent language models from a TOML config.
//
//   flashtrain --config configs/quickstart.toml [--section.key=value ...]
//   flashtrain --nproc 2 --config ...     (one rank per GPU on this machine)
//   torchrun --no-python --nproc-per-node=2 flashtrain --config ...
//   flashtrain {train|eval|sample|export|tasks|tune|prepare} ...   (flashtrain --help)
//
// This file only parses the command line, loads the config and maps errors
// to exit statuses; the work is in trainer/src (commands.h).
#include <cstdlib>
#include <iostream>
#include <string>

#include "flashtrain/config/config_error.h"
#include "flashtrain/config/load.h"
#include "flashtrain/config/consistency.h"
#include "flashtrain/config/print.h"
#include "flashtrain/data/prepare_command.h"
#include "flashtrain/distributed/environment.h"
#include "flashtrain/distributed/local_launcher.h"
#include "flashtrain/trainer/cli/command_line.h"
#include "flashtrain/trainer/cli/commands.h"
#include "flashtrain/trainer/cli/tune_report.h"
#include "flashtrain/trainer/run/world_rules.h"

namespace {

using namespace flashtrain;
using trainer::Subcommand;

int run(int argc, char** argv) {
  // Bare `flashtrain` would train the 125M-class defaults on the full corpus;
  // more likely the user wants to know how to start.
  if (argc == 1)
    throw trainer::UsageError("no --config given; e.g. flashtrain --config configs/quickstart.toml (flashtrain "
                              "--help lists the subcommands and options)");
  const trainer::CommandLine command = trainer::parse_command_line(argc, argv);
  if (command.subcommand == Subcommand::kHelp) {
    std::cout << trainer::usage_text(command.help_topic);
    return 0;
  }
  if (command.subcommand == Subcommand::kPrepare)
    return data::run_prepare_command(command.tool_args, "flashtrain prepare", std::cout, std::cerr);

  const config::ResolvedConfig resolved = command.config_path.empty()
                                              ? config::resolve_defaults(command.overrides)
                                              : config::load_config(command.config_path, command.overrides);
  if (command.print_config) {
    std::cout << config::to_toml(resolved.config);
    return 0;
  }
  if (command.subcommand == Subcommand::kTune) {  // needs no data files
    std::cout << trainer::tune_report(resolved, command.device);
    return 0;
  }
  if (command.subcommand == Subcommand::kTasks && resolved.config.data.task.empty())
    throw resolved.error_at({"data.task"}, "the tasks subcommand trains on a state-tracking task, but data.task "
                                           "is not set; e.g. --data.task=parity or configs/tasks_parity.toml");
  config::check_input_files(resolved);
  const bool trains = command.subcommand == Subcommand::kTrain || command.subcommand == Subcommand::kTasks;
  // --nproc N (parallelism.nproc): this process only starts the ranks, each
  // this program with the same arguments, and watches them.
  if (trains && trainer::should_launch_ranks(resolved.config.parallelism.nproc,
                                             distributed::parse_environment(distributed::current_environment()))) {
    distributed::LaunchOptions launch;
    launch.executable = distributed::self_executable();
    launch.argv.assign(argv, argv + argc);
    launch.nproc = static_cast<int>(resolved.config.parallelism.nproc);
    return distributed::launch_local(launch, std::cerr);
  }
  switch (command.subcommand) {
    case Subcommand::kTrain:
    case Subcommand::kTasks:
      return trainer::run_train(resolved);
    case Subcommand::kEval:
      return trainer::run_eval(resolved, command);
    case Subcommand::kSample:
      return trainer::run_sample(resolved, command);
    case Subcommand::kExport:
      return trainer::run_export(resolved, command);
    default:
      return 1;
  }
}

}  // namespace

// "[rank 1] " in a rank of a distributed run (every rank may print the same
// error), "" otherwise.
std::string rank_prefix() {
  const char* rank = std::getenv("RANK");
  const char* world = std::getenv("WORLD_SIZE");
  if (!rank || !world || std::string(world) == "1") return "";
  return std::string("[rank ") + rank + "] ";
}

int main(int argc, char** argv) {
  // Each progress line reaches a log file or pipe as it is written, not when
  // a buffer fills (minutes into a run whose stdout is a file).
  std::cout << std::unitbuf;
  try {
    return run(argc, argv);
  } catch (const flashtrain::trainer::UsageError& e) {
    std::cerr << "flashtrain: " << rank_prefix() << "error: " << e.what() << "\n";
    return flashtrain::config::kConfigErrorExitCode;
  } catch (const flashtrain::config::ConfigError& e) {
    // Located errors start with their file or flag; the others with our name.
    std::cerr << (e.file().empty() ? "flashtrain: " : "") << rank_prefix() << e.what() << "\n";
    return flashtrain::config::kConfigErrorExitCode;
  } catch (const std::exception& e) {
    std::cerr << "flashtrain: " << rank_prefix() << "error: " << e.what() << "\n";
    return 1;
  }
}

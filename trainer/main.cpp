// flashtrain: train recurrent language models from a TOML config.
//
//   flashtrain --config configs/quickstart.toml [--section.key=value ...]
//   flashtrain {train|eval|sample|export|tasks|tune|prepare|demo} ...   (flashtrain --help)
//
// This file only parses the command line, loads the config and maps errors
// to exit statuses; the work is in trainer/src (commands.h).
#include <iostream>

#include "flashtrain/config/config_error.h"
#include "flashtrain/config/load.h"
#include "flashtrain/config/consistency.h"
#include "flashtrain/config/print.h"
#include "flashtrain/data/prepare_command.h"
#include "flashtrain/trainer/command_line.h"
#include "flashtrain/trainer/commands.h"
#include "flashtrain/trainer/tune_report.h"

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
    std::cout << trainer::usage_text();
    return 0;
  }
  if (command.subcommand == Subcommand::kDemo) return trainer::run_demo(command.tool_args);
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

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const flashtrain::trainer::UsageError& e) {
    std::cerr << "flashtrain: error: " << e.what() << "\n";
    return flashtrain::config::kConfigErrorExitCode;
  } catch (const flashtrain::config::ConfigError& e) {
    std::cerr << e.what() << "\n";
    return flashtrain::config::kConfigErrorExitCode;
  } catch (const std::exception& e) {
    std::cerr << "flashtrain: error: " << e.what() << "\n";
    return 1;
  }
}

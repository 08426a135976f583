// The subcommands of the flashtrain executable (main.cpp parses the command
// line and loads the config). Each returns the exit status; errors leave as
// exceptions: config::ConfigError and UsageError mean status 2, anything else
// status 1 (main.cpp prints them without a stack trace; torch's errors are
// rethrown as std::runtime_error without their backtrace).
#pragma once

#include <string>
#include <vector>

#include "flashtrain/config/resolved_config.h"
#include "flashtrain/trainer/cli/command_line.h"

namespace flashtrain::trainer {

// train and tasks: 0 when training.steps are done, 128 + N when stopped by
// signal N (after saving a checkpoint), 1 when the NaN/Inf guard gave up.
int run_train(const config::ResolvedConfig& resolved);
// Validation loss and perplexity (tasks: accuracy) of a checkpoint.
int run_eval(const config::ResolvedConfig& resolved, const CommandLine& command);
// Continues --prompt with a checkpoint, one token at a time.
int run_sample(const config::ResolvedConfig& resolved, const CommandLine& command);
// Writes a checkpoint as safetensors + config.json + tokenizer model.
int run_export(const config::ResolvedConfig& resolved, const CommandLine& command);

}  // namespace flashtrain::trainer

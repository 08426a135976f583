#include "flashtrain/trainer/command_line.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>

#include "flashtrain/config/overrides.h"

namespace flashtrain::trainer {
namespace {

const std::map<std::string, Subcommand>& subcommands() {
  static const std::map<std::string, Subcommand> names = {
      {"train", Subcommand::kTrain},   {"eval", Subcommand::kEval},   {"sample", Subcommand::kSample},
      {"export", Subcommand::kExport}, {"tasks", Subcommand::kTasks}, {"tune", Subcommand::kTune},
      {"prepare", Subcommand::kPrepare}, {"demo", Subcommand::kDemo},   {"help", Subcommand::kHelp}};
  return names;
}

// Options that take a value, and the subcommands that accept them.
struct ValueOption {
  const char* name;
  std::vector<Subcommand> allowed;
};

const std::vector<ValueOption>& value_options() {
  using S = Subcommand;
  static const std::vector<ValueOption> options = {
      {"--config", {S::kTrain, S::kEval, S::kSample, S::kExport, S::kTasks, S::kTune}},
      {"--device", {S::kTune}},
      {"--checkpoint", {S::kEval, S::kSample, S::kExport}},
      {"--output", {S::kExport}},
      {"--prompt", {S::kSample}},
      {"--max-new-tokens", {S::kSample}},
      {"--temperature", {S::kSample}},
      {"--seed", {S::kSample}},
      {"--nproc", {S::kTrain, S::kTasks}},
  };
  return options;
}

std::int64_t parse_int(const std::string& option, const std::string& text, std::int64_t min) {
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || value < min)
    throw UsageError(option + " needs an integer >= " + std::to_string(min) + ", got '" + text + "'");
  return value;
}

double parse_non_negative(const std::string& option, const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(value) || value < 0)
    throw UsageError(option + " needs a number >= 0, got '" + text + "'");
  return value;
}

bool allowed_in(const std::vector<Subcommand>& allowed, Subcommand s) {
  for (Subcommand a : allowed)
    if (a == s) return true;
  return false;
}

void set_value(CommandLine& cl, const std::string& option, const std::string& value) {
  if (option == "--config") cl.config_path = value;
  else if (option == "--checkpoint") cl.checkpoint = value;
  else if (option == "--output") cl.output = value;
  else if (option == "--device") cl.device = value;
  else if (option == "--prompt") cl.prompt = value;
  else if (option == "--max-new-tokens") cl.max_new_tokens = parse_int(option, value, 1);
  else if (option == "--temperature") cl.temperature = parse_non_negative(option, value);
  else if (option == "--seed") cl.seed = std::uint64_t(parse_int(option, value, 0));
  // --nproc N is parallelism.nproc; as an override it is validated (and
  // located in errors) like any config key.
  else if (option == "--nproc") cl.overrides.push_back("--parallelism.nproc=" + std::to_string(parse_int(option, value, 1)));
}

}  // namespace

const char* subcommand_name(Subcommand subcommand) {
  for (const auto& [name, value] : subcommands())
    if (value == subcommand) return name.c_str();
  return "?";
}

CommandLine parse_command_line(int argc, const char* const* argv) {
  CommandLine cl;
  int i = 1;
  if (i < argc && argv[i][0] != '-') {
    const auto it = subcommands().find(argv[i]);
    if (it == subcommands().end())
      throw UsageError(std::string("unknown subcommand '") + argv[i] +
                       "'; expected train, eval, sample, export, tasks, tune, prepare or demo");
    cl.subcommand = it->second;
    ++i;
  }
  if (cl.subcommand == Subcommand::kDemo || cl.subcommand == Subcommand::kPrepare) {
    cl.tool_args.assign(argv + i, argv + argc);
    return cl;
  }
  for (; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      cl.subcommand = Subcommand::kHelp;
      return cl;
    }
    if (arg == "--print-config") {
      cl.print_config = true;
      continue;
    }
    if (arg == "--resume" || arg.rfind("--resume=", 0) == 0) {
      if (cl.subcommand != Subcommand::kTrain && cl.subcommand != Subcommand::kTasks)
        throw UsageError("--resume is an option of train and tasks; use --checkpoint=DIR to pick a checkpoint");
      const std::string target = arg == "--resume" ? "latest" : arg.substr(9);
      if (target.empty()) throw UsageError("--resume= needs latest, none or a checkpoint directory");
      cl.overrides.push_back("--checkpoint.resume=" + target);
      continue;
    }
    if (config::is_override_flag(arg)) {
      cl.overrides.push_back(arg);
      continue;
    }
    bool matched = false;
    for (const ValueOption& option : value_options()) {
      const std::string name = option.name;
      std::string value;
      if (arg == name) {
        if (i + 1 >= argc) throw UsageError(name + " needs a value");
        value = argv[++i];
      } else if (arg.rfind(name + "=", 0) == 0) {
        value = arg.substr(name.size() + 1);
      } else {
        continue;
      }
      if (!allowed_in(option.allowed, cl.subcommand))
        throw UsageError(name + " is not an option of '" + subcommand_name(cl.subcommand) + "'");
      set_value(cl, name, value);
      matched = true;
      break;
    }
    if (matched) continue;
    if (arg.rfind("-", 0) == 0) throw UsageError("unknown option '" + arg + "' (see flashtrain --help)");
    throw UsageError("unexpected argument '" + arg + "' (see flashtrain --help)");
  }
  if (cl.subcommand == Subcommand::kSample && cl.prompt.empty())
    throw UsageError("sample needs --prompt=TEXT");
  return cl;
}

std::string usage_text() {
  return R"(usage: flashtrain [SUBCOMMAND] [--config FILE] [OPTIONS] [--section.key=value ...]

subcommands:
  train   (default) train the configured model; resumes from the newest checkpoint
          of the run unless checkpoint.resume says otherwise
  eval    validation loss and perplexity (tasks: scaled accuracy) of a checkpoint
  sample  generate text from a prompt with a checkpoint, one token at a time
  export  write a checkpoint as safetensors + config.json + tokenizer model
  tasks   train on the state-tracking task named by data.task (as train)
  tune    the fused kernel's configuration for the model's recurrent blocks, and
          why the tuner chose it (flashrnn_ops/tune); --device picks the GPU
  prepare text documents -> token shards (flashtrain prepare --help; the same as
          the flashtrain-prepare tool)
  demo    the recurrent-op demo: an LSTM learns parity (flashtrain demo --help)

options:
  --config FILE          the TOML config (default: the built-in defaults)
  --print-config         print the resolved config as TOML and exit
  --section.key=value    override a config key, e.g. --training.steps=100
  --resume[=WHERE]       train/tasks: latest (default), none or a checkpoint directory
  --nproc N              train/tasks: start N data-parallel ranks on this machine (one per
                         GPU; parallelism.nproc); under torchrun leave it out
  --checkpoint DIR       eval/sample/export: the checkpoint (default: the newest valid one)
  --output DIR           export: where to write (default: <job.dump_folder>/export/step_<N>)
  --device NAME          tune: a100, h100, h200, l4 (published properties) or cuda, cuda:N
                         (a live GPU; the default)
  --prompt TEXT          sample: the text to continue
  --max-new-tokens N     sample: tokens to generate (default 64)
  --temperature T        sample: 0 = greedy (default), else softmax temperature
  --seed N               sample: seed of temperature sampling (default 0)

exit status: 0 done, 1 run failure, 2 usage or config error, 128+N stopped by signal N
(after saving a checkpoint).
)";
}

}  // namespace flashtrain::trainer

#include "flashtrain/trainer/cli/command_line.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <vector>

#include "flashtrain/config/overrides.h"

namespace flashtrain::trainer {
namespace {

using S = Subcommand;

// The subcommands: one line each of what they do, for both help texts.
struct SubcommandSpec {
  const char* name;
  Subcommand subcommand;
  const char* summary;  // lines after the first indented by 10
};

const std::vector<SubcommandSpec>& subcommand_specs() {
  static const std::vector<SubcommandSpec> specs = {
      {"train", S::kTrain,
       "(default) train the configured model; resumes from the newest checkpoint\n"
       "          of the run unless checkpoint.resume says otherwise"},
      {"eval", S::kEval, "validation loss and perplexity (tasks: scaled accuracy) of a checkpoint"},
      {"sample", S::kSample, "generate text from a prompt with a checkpoint, one token at a time"},
      {"export", S::kExport, "write a checkpoint as safetensors + config.json + tokenizer model"},
      {"tasks", S::kTasks, "train on the state-tracking task named by data.task (as train)"},
      {"tune", S::kTune,
       "the fused kernel's configuration for the model's recurrent blocks, and\n"
       "          why the tuner chose it (flashrnn_ops/tune); --device picks the GPU"},
      {"prepare", S::kPrepare,
       "text documents -> token shards (flashtrain prepare --help; the same as\n"
       "          the flashtrain-prepare tool)"},
      {"help", S::kHelp, "this text; flashtrain SUBCOMMAND --help: that subcommand's"},
  };
  return specs;
}

// The options: the subcommands that accept each, and its help line. Those
// with a value (`value` set) are parsed from this table; the others
// (--print-config, --section.key=value, --resume) have their own rules below.
struct OptionSpec {
  const char* name;
  const char* value;  // "FILE", ...; nullptr: a flag
  std::vector<Subcommand> allowed;
  const char* help;  // lines after the first indented by 25
};

const std::vector<OptionSpec>& option_specs() {
  static const std::vector<OptionSpec> specs = {
      {"--config", "FILE", {S::kTrain, S::kEval, S::kSample, S::kExport, S::kTasks, S::kTune},
       "the TOML config (default: the built-in defaults)"},
      {"--print-config", nullptr, {S::kTrain, S::kEval, S::kSample, S::kExport, S::kTasks, S::kTune},
       "print the resolved config as TOML and exit"},
      {"--section.key=value", nullptr, {S::kTrain, S::kEval, S::kSample, S::kExport, S::kTasks, S::kTune},
       "override a config key, e.g. --training.steps=100"},
      {"--resume[=WHERE]", nullptr, {S::kTrain, S::kTasks},
       "latest (default), none or a checkpoint dir (checkpoint.resume)"},
      {"--profile[=N]", nullptr, {S::kTrain, S::kTasks},
       "profile N steps (default 5) after the first three: a trace under\n"
       "                         <dump_folder>/profile and a summary (training.profile_steps)"},
      {"--nproc", "N", {S::kTrain, S::kTasks},
       "start N data-parallel ranks on this machine (one per GPU;\n"
       "                         parallelism.nproc); under torchrun leave it out"},
      {"--checkpoint", "DIR", {S::kEval, S::kSample, S::kExport},
       "the checkpoint (default: the newest valid one)"},
      {"--output", "DIR", {S::kExport}, "where to write (default: <job.dump_folder>/export/step_<N>)"},
      {"--device", "NAME", {S::kTune},
       "a100, h100, h200, l4 (published properties) or cuda, cuda:N\n"
       "                         (a live GPU; the default)"},
      {"--prompt", "TEXT", {S::kSample}, "the text to continue"},
      {"--prompt-file", "FILE", {S::kSample}, "the text to continue, read from FILE"},
      {"--max-new-tokens", "N", {S::kSample}, "tokens to generate (default 64)"},
      {"--temperature", "T", {S::kSample}, "0 = greedy (default), else softmax temperature"},
      {"--seed", "N", {S::kSample}, "seed of temperature sampling (default 0)"},
      {"--prefill-chunks", "N|auto", {S::kSample},
       "the prompt's pass as a wavefront over N chunks (0: block after\n"
       "                         block; default auto: two per block on a GPU for long prompts)"},
      {"--cuda-graph", "on|off", {S::kSample},
       "replay each decode step from a CUDA graph (default on; a model\n"
       "                         with attention decodes eagerly: its KV cache grows)"},
  };
  return specs;
}

const std::map<std::string, Subcommand>& subcommands() {
  static const std::map<std::string, Subcommand> names = [] {
    std::map<std::string, Subcommand> m;
    for (const SubcommandSpec& spec : subcommand_specs()) m.emplace(spec.name, spec.subcommand);
    return m;
  }();
  return names;
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

bool parse_on_off(const std::string& option, const std::string& text) {
  if (text == "on") return true;
  if (text == "off") return false;
  throw UsageError(option + " needs on or off, got '" + text + "'");
}

bool allowed_in(const std::vector<Subcommand>& allowed, Subcommand s) {
  for (Subcommand a : allowed)
    if (a == s) return true;
  return false;
}

// "  --config FILE          the TOML config ...", with the subcommands
// that take it when `with_subcommands`.
std::string option_line(const OptionSpec& option, bool with_subcommands) {
  std::string head = std::string("  ") + option.name + (option.value ? std::string(" ") + option.value : "");
  head.resize(std::max<std::size_t>(head.size() + 1, 25), ' ');
  std::string where;
  if (with_subcommands && option.allowed.size() < 6) {
    for (Subcommand s : option.allowed) where += std::string(where.empty() ? "" : "/") + subcommand_name(s);
    where += ": ";
  }
  return head + where + option.help + "\n";
}

void set_value(CommandLine& cl, const std::string& option, const std::string& value) {
  if (option == "--config") cl.config_path = value;
  else if (option == "--checkpoint") cl.checkpoint = value;
  else if (option == "--output") cl.output = value;
  else if (option == "--device") cl.device = value;
  else if (option == "--prompt") cl.prompt = value;
  else if (option == "--prompt-file") cl.prompt_file = value;
  else if (option == "--max-new-tokens") cl.max_new_tokens = parse_int(option, value, 1);
  else if (option == "--temperature") cl.temperature = parse_non_negative(option, value);
  else if (option == "--seed") cl.seed = std::uint64_t(parse_int(option, value, 0));
  else if (option == "--cuda-graph") cl.cuda_graph = parse_on_off(option, value);
  else if (option == "--prefill-chunks") {
    if (value != "auto") cl.prefill_chunks = parse_int(option, value, 0);
  }
  // --nproc N is parallelism.nproc; as an override it is validated (and
  // located in errors) like any config key.
  else if (option == "--nproc") cl.overrides.push_back("--nproc=" + std::to_string(parse_int(option, value, 1)));
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
                       "'; expected train, eval, sample, export, tasks, tune or prepare");
    cl.subcommand = it->second;
    ++i;
  }
  if (cl.subcommand == Subcommand::kPrepare) {
    cl.tool_args.assign(argv + i, argv + argc);
    return cl;
  }
  if (cl.subcommand == Subcommand::kHelp && i < argc && argv[i][0] != '-') {
    // `flashtrain help SUBCOMMAND`: the same text as `flashtrain SUBCOMMAND --help`.
    const auto topic = subcommands().find(argv[i]);
    if (topic == subcommands().end() || topic->second == Subcommand::kHelp || i + 1 < argc)
      throw UsageError(std::string("help takes one subcommand (train, eval, sample, export, tasks, tune or "
                                   "prepare), got '") + argv[i] + (i + 1 < argc ? " ...'" : "'"));
    if (topic->second == Subcommand::kPrepare) {  // prepare's help is the tool's own
      cl.subcommand = Subcommand::kPrepare;
      cl.tool_args = {"--help"};
      return cl;
    }
    cl.help_topic = topic->second;
    return cl;
  }
  for (; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      cl.help_topic = cl.subcommand == Subcommand::kHelp ? std::nullopt : std::optional<Subcommand>(cl.subcommand);
      if (i == 1) cl.help_topic.reset();  // bare `flashtrain --help`: the global text
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
      cl.overrides.push_back("--resume=" + target);  // checkpoint.resume (overrides.cpp)
      continue;
    }
    if (arg == "--profile" || arg.rfind("--profile=", 0) == 0) {
      if (cl.subcommand != Subcommand::kTrain && cl.subcommand != Subcommand::kTasks)
        throw UsageError("--profile is an option of train and tasks");
      const std::string steps = arg == "--profile" ? "5" : arg.substr(10);
      cl.overrides.push_back("--profile=" + std::to_string(parse_int("--profile", steps, 1)));  // training.profile_steps
      continue;
    }
    if (config::is_override_flag(arg)) {
      cl.overrides.push_back(arg);
      continue;
    }
    bool matched = false;
    for (const OptionSpec& option : option_specs()) {
      if (!option.value) continue;  // the flags above
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
  if (cl.subcommand == Subcommand::kSample && cl.prompt.empty() == cl.prompt_file.empty())
    throw UsageError("sample needs --prompt=TEXT or --prompt-file=FILE (one of them)");
  return cl;
}

std::string usage_text(std::optional<Subcommand> topic) {
  if (topic) {
    const SubcommandSpec* spec = nullptr;
    for (const SubcommandSpec& s : subcommand_specs())
      if (s.subcommand == *topic) spec = &s;
    std::string text = std::string("usage: flashtrain ") + spec->name + " [--config FILE] [OPTIONS] [--section.key=value ...]\n\n" +
                       spec->name + ": " + spec->summary + "\n\noptions:\n";
    for (const OptionSpec& option : option_specs())
      if (allowed_in(option.allowed, *topic)) text += option_line(option, /*with_subcommands=*/false);
    return text + "\nexit status: 0 done, 1 run failure, 2 usage or config error, 128+N stopped by signal N\n";
  }
  std::string text = "usage: flashtrain [SUBCOMMAND] [--config FILE] [OPTIONS] [--section.key=value ...]\n\nsubcommands:\n";
  for (const SubcommandSpec& spec : subcommand_specs()) {
    std::string head = std::string("  ") + spec.name;
    head.resize(10, ' ');
    text += head + spec.summary + "\n";
  }
  text += "\noptions:\n";
  for (const OptionSpec& option : option_specs()) text += option_line(option, /*with_subcommands=*/true);
  return text +
         "\nexit status: 0 done, 1 run failure, 2 usage or config error, 128+N stopped by signal N\n"
         "(after saving a checkpoint).\n";
}

}  // namespace flashtrain::trainer

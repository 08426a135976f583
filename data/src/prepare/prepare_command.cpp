#include "flashtrain/data/prepare_command.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "flashtrain/data/prepare.h"

namespace flashtrain::data {
namespace {

class PrepareUsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

long long parse_integer(const std::string& flag, const std::string& text) {
  try {
    std::size_t used = 0;
    const long long value = std::stoll(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  throw PrepareUsageError(flag + " expects an integer, got '" + text + "'");
}

double parse_number(const std::string& flag, const std::string& text) {
  try {
    std::size_t used = 0;
    const double value = std::stod(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  throw PrepareUsageError(flag + " expects a number, got '" + text + "'");
}

struct ParsedArguments {
  PrepareOptions options;
  bool help = false;
};

ParsedArguments parse_arguments(const std::vector<std::string>& args) {
  ParsedArguments parsed;
  PrepareOptions& o = parsed.options;
  o.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  o.tokenizer_options.threads = 4;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw PrepareUsageError(arg + " needs a value");
      return args[++i];
    };
    if (arg == "--help" || arg == "-h") {
      parsed.help = true;
      return parsed;
    } else if (arg == "--output") {
      o.output_dir = value();
    } else if (arg == "--tokenizer") {
      o.tokenizer_model = value();
    } else if (arg == "--train-tokenizer") {
      o.train_tokenizer = true;
    } else if (arg == "--vocab-size") {
      o.tokenizer_options.vocab_size = static_cast<int>(parse_integer(arg, value()));
    } else if (arg == "--model-type") {
      try {
        o.tokenizer_options.model = parse_tokenizer_model(value());
      } catch (const std::invalid_argument& e) {
        throw PrepareUsageError(e.what());
      }
    } else if (arg == "--tokenizer-lines") {
      o.tokenizer_options.max_training_lines = parse_integer(arg, value());
    } else if (arg == "--tokenizer-threads") {
      o.tokenizer_options.threads = static_cast<int>(parse_integer(arg, value()));
    } else if (arg == "--text-field") {
      o.text_field = value();
      if (o.text_field.empty()) throw PrepareUsageError("--text-field needs a field name");
    } else if (arg == "--val-fraction") {
      o.val_fraction = parse_number(arg, value());
    } else if (arg == "--split-seed") {
      o.split_seed = static_cast<std::uint64_t>(parse_integer(arg, value()));
    } else if (arg == "--shard-tokens") {
      o.shard_tokens = parse_integer(arg, value());
    } else if (arg == "--threads") {
      o.threads = static_cast<int>(parse_integer(arg, value()));
    } else if (arg == "--quiet") {
      o.progress = false;
    } else if (arg.rfind("--", 0) == 0) {
      throw PrepareUsageError("unknown option " + arg);
    } else {
      o.inputs.push_back(arg);
    }
  }
  if (o.output_dir.empty()) throw PrepareUsageError("--output is required");
  if (o.inputs.empty()) throw PrepareUsageError("no input files or directories given");
  for (const std::string& input : o.inputs) {
    std::error_code ignored;
    if (!std::filesystem::exists(input, ignored))
      throw PrepareUsageError("input '" + input + "' does not exist (INPUT is a text file or a directory)");
  }
  if (o.tokenizer_model.empty()) o.tokenizer_model = o.output_dir + "/tokenizer.model";
  std::error_code ignored;
  if (!o.train_tokenizer && !std::filesystem::exists(o.tokenizer_model, ignored))
    throw PrepareUsageError("there is no tokenizer model at '" + o.tokenizer_model +
                            "': pass --tokenizer MODEL, or --train-tokenizer --vocab-size N to train one");
  return parsed;
}

void print_split(std::ostream& out, const char* name, const SplitReport& r) {
  char line[160];
  std::snprintf(line, sizeof line, "  %-5s %8lld documents %14lld bytes %12lld tokens  %zu shard(s)\n", name,
                static_cast<long long>(r.documents), static_cast<long long>(r.bytes),
                static_cast<long long>(r.tokens), r.shards.size());
  out << line;
}

}  // namespace

std::string prepare_usage(const std::string& program) {
  return "usage: " + program + R"( --output DIR [options] INPUT...

INPUT is a text file (one document), a JSON-lines file (.jsonl, or compressed
.jsonl.gz / .jsonl.zst: each non-empty line an object whose text field is one
document, read as a stream) or a directory (each *.txt file below it one
document, each *.jsonl, *.jsonl.gz and *.jsonl.zst file its lines). Writes DIR/train_NNNNNN.bin, DIR/val_NNNNNN.bin (llm.c token
shards) and DIR/prepare.json; refuses a DIR holding shards that its
prepare.json does not list (it overwrites and removes only its own).

  --output DIR              where shards go (required)
  --tokenizer PATH          SentencePiece model (default DIR/tokenizer.model)
  --train-tokenizer         train the model on the training documents first
  --vocab-size N            vocabulary size when training (8192)
  --model-type bpe|unigram  tokenizer algorithm when training (bpe)
  --tokenizer-lines N       lines sampled for training, 0 = all (2000000)
  --tokenizer-threads N     threads for training (4; unigram's result depends on it)
  --text-field NAME         the field of each JSON line that holds its text (text)
  --val-fraction X          share of documents held out for validation (0.01)
  --split-seed N            seed of the train/val split (0)
  --shard-tokens N          tokens per shard (100000000)
  --threads N               encoding threads (all cores); output does not depend on it
  --quiet                   no progress line
)";
}

int run_prepare_command(const std::vector<std::string>& args, const std::string& program, std::ostream& out,
                        std::ostream& err) {
  ParsedArguments parsed;
  try {
    parsed = parse_arguments(args);
  } catch (const PrepareUsageError& e) {
    err << program << ": " << e.what() << "\n\n" << prepare_usage(program);
    return 2;
  }
  if (parsed.help) {
    out << prepare_usage(program);
    return 0;
  }
  const PrepareOptions& options = parsed.options;
  try {
    const PrepareReport report = prepare_shards(options);
    out << program << ": wrote " << options.output_dir << "\n";
    print_split(out, "train", report.train);
    print_split(out, "val", report.val);
    char line[512];
    std::snprintf(line, sizeof line, "  tokenizer %s: vocab %d%s, %.1f s\n", options.tokenizer_model.c_str(),
                  report.vocab_size, options.train_tokenizer ? " (trained here)" : "", report.tokenizer_seconds);
    out << line;
    std::snprintf(line, sizeof line, "  encoding: %.1f s with %d threads\n", report.encode_seconds, options.threads);
    out << line;
    return 0;
  } catch (const std::exception& e) {
    // The library's messages start with "prepare: "; the program name says it.
    std::string message = e.what();
    if (message.rfind("prepare: ", 0) == 0) message.erase(0, 9);
    err << program << ": " << message << "\n";
    return 1;
  }
}

}  // namespace flashtrain::data

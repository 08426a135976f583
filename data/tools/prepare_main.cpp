// flashtrain-prepare: text documents -> train/val token shards (and, with
// --train-tokenizer, a SentencePiece model first). See data/README.md.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>

#include "flashtrain/data/prepare.h"

namespace {

using flashtrain::data::PrepareOptions;

constexpr const char* kUsage = R"(usage: flashtrain-prepare --output DIR [options] INPUT...

INPUT is a text file (one document) or a directory (each *.txt file below it
is one document). Writes DIR/train_NNNNNN.bin, DIR/val_NNNNNN.bin (llm.c token
shards) and DIR/prepare.json.

  --output DIR              where shards go (required)
  --tokenizer PATH          SentencePiece model (default DIR/tokenizer.model)
  --train-tokenizer         train the model on the training documents first
  --vocab-size N            vocabulary size when training (8192)
  --model-type bpe|unigram  tokenizer algorithm when training (bpe)
  --tokenizer-lines N       lines sampled for training, 0 = all (2000000)
  --tokenizer-threads N     threads for training (4; unigram's result depends on it)
  --val-fraction X          share of documents held out for validation (0.01)
  --split-seed N            seed of the train/val split (0)
  --shard-tokens N          tokens per shard (100000000)
  --threads N               encoding threads (all cores); output does not depend on it
  --quiet                   no progress line
)";

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "flashtrain-prepare: %s\n\n%s", message.c_str(), kUsage);
  std::exit(2);
}

long long parse_integer(const std::string& flag, const std::string& text) {
  try {
    std::size_t used = 0;
    const long long value = std::stoll(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  usage_error(flag + " expects an integer, got '" + text + "'");
}

double parse_number(const std::string& flag, const std::string& text) {
  try {
    std::size_t used = 0;
    const double value = std::stod(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  usage_error(flag + " expects a number, got '" + text + "'");
}

PrepareOptions parse_arguments(int argc, char** argv) {
  PrepareOptions o;
  o.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  o.tokenizer_options.threads = 4;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
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
        o.tokenizer_options.model = flashtrain::data::parse_tokenizer_model(value());
      } catch (const std::invalid_argument& e) {
        usage_error(e.what());
      }
    } else if (arg == "--tokenizer-lines") {
      o.tokenizer_options.max_training_lines = parse_integer(arg, value());
    } else if (arg == "--tokenizer-threads") {
      o.tokenizer_options.threads = static_cast<int>(parse_integer(arg, value()));
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
      usage_error("unknown option " + arg);
    } else {
      o.inputs.push_back(arg);
    }
  }
  if (o.output_dir.empty()) usage_error("--output is required");
  if (o.inputs.empty()) usage_error("no input files or directories given");
  if (o.tokenizer_model.empty()) o.tokenizer_model = o.output_dir + "/tokenizer.model";
  return o;
}

void print_split(const char* name, const flashtrain::data::SplitReport& r) {
  std::printf("  %-5s %8lld documents %14lld bytes %12lld tokens  %zu shard(s)\n", name,
              static_cast<long long>(r.documents), static_cast<long long>(r.bytes),
              static_cast<long long>(r.tokens), r.shards.size());
}

}  // namespace

int main(int argc, char** argv) {
  const PrepareOptions options = parse_arguments(argc, argv);
  try {
    const auto report = flashtrain::data::prepare_shards(options);
    std::printf("flashtrain-prepare: wrote %s\n", options.output_dir.c_str());
    print_split("train", report.train);
    print_split("val", report.val);
    std::printf("  tokenizer %s: vocab %d%s, %.1f s\n", options.tokenizer_model.c_str(),
                report.vocab_size, options.train_tokenizer ? " (trained here)" : "",
                report.tokenizer_seconds);
    std::printf("  encoding: %.1f s with %d threads\n", report.encode_seconds, options.threads);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flashtrain-prepare: %s\n", e.what());
    return 1;
  }
}

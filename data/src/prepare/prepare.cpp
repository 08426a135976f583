#include "flashtrain/data/prepare.h"

#include <chrono>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "flashtrain/data/atomic_file.h"
#include "flashtrain/data/error.h"
#include "ordered_encoder.h"
#include "progress_line.h"
#include "shard_sequence.h"

namespace flashtrain::data {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void check_options(const PrepareOptions& o) {
  if (o.output_dir.empty()) throw DataError("prepare: no output directory given");
  if (o.tokenizer_model.empty()) throw DataError("prepare: no tokenizer model path given");
  if (o.threads < 1) throw DataError("prepare: threads must be >= 1, got " + std::to_string(o.threads));
  if (!o.train_tokenizer && !std::filesystem::exists(o.tokenizer_model)) {
    throw DataError("prepare: tokenizer model '" + o.tokenizer_model +
                    "' does not exist (train one with --train-tokenizer)");
  }
}

SplitReport encode_split(const std::string& label, const std::vector<Document>& documents,
                         const Tokenizer& tokenizer, const PrepareOptions& o) {
  SplitReport report;
  report.documents = static_cast<std::int64_t>(documents.size());
  ShardSequence shards(o.output_dir, label, format_for_vocab_size(tokenizer.vocab_size()),
                       o.shard_tokens);
  ProgressLine progress(label, report.documents, o.progress);
  encode_in_order(documents, tokenizer, o.threads, [&](std::size_t index, EncodedDocument&& doc) {
    shards.append(doc.tokens);
    report.tokens += static_cast<std::int64_t>(doc.tokens.size());
    report.bytes += doc.bytes;
    progress.update(static_cast<std::int64_t>(index + 1), report.tokens, report.bytes);
  });
  progress.finish(report.documents, report.tokens, report.bytes);
  report.shards = shards.finish();
  remove_stale_shards(o.output_dir, label, report.shards);
  return report;
}

nlohmann::json split_json(const SplitReport& r, const std::vector<Document>& documents,
                          bool list_documents) {
  nlohmann::json j{{"documents", r.documents}, {"bytes", r.bytes}, {"tokens", r.tokens}};
  nlohmann::json shards = nlohmann::json::array();
  for (const auto& path : r.shards) shards.push_back(std::filesystem::path(path).filename().string());
  j["shards"] = shards;
  if (list_documents) {
    nlohmann::json names = nlohmann::json::array();
    for (const Document& d : documents) names.push_back(d.name);
    j["document_names"] = names;
  }
  return j;
}

// The model's path relative to the output directory when it lies inside it,
// so the directory can move.
std::string model_path_for_manifest(const PrepareOptions& o) {
  const std::filesystem::path relative =
      std::filesystem::path(o.tokenizer_model).lexically_relative(o.output_dir);
  if (relative.empty() || *relative.begin() == "..") return o.tokenizer_model;
  return relative.generic_string();
}

void write_manifest(const PrepareOptions& o, const PrepareReport& r, const DocumentSplit& split) {
  const TokenizerTrainOptions& t = o.tokenizer_options;
  nlohmann::json manifest{
      {"inputs", o.inputs},
      {"tokenizer",
       {{"model", model_path_for_manifest(o)},
        {"trained_here", o.train_tokenizer},
        {"vocab_size", r.vocab_size},
        {"model_type", t.model == TokenizerModel::kBpe ? "bpe" : "unigram"},
        {"max_training_lines", t.max_training_lines},
        {"threads", t.threads},
        {"seed", t.seed}}},
      {"token_format", std::string(to_string(format_for_vocab_size(r.vocab_size)))},
      {"document_tokens", "bos + text + eos; lines joined by the newline byte piece"},
      {"val_fraction", o.val_fraction},
      {"split_seed", o.split_seed},
      {"shard_tokens", o.shard_tokens},
      {"train", split_json(r.train, split.train, false)},
      {"val", split_json(r.val, split.val, true)},
      {"seconds", {{"tokenizer", r.tokenizer_seconds}, {"encode", r.encode_seconds}}},
  };
  write_file_atomically((std::filesystem::path(o.output_dir) / "prepare.json").string(),
                        manifest.dump(2) + "\n");
}

}  // namespace

PrepareReport prepare_shards(const PrepareOptions& options) {
  check_options(options);
  std::filesystem::create_directories(options.output_dir);
  const std::vector<Document> documents = find_documents(options.inputs);
  const DocumentSplit split = split_documents(documents, options.val_fraction, options.split_seed);

  PrepareReport report;
  if (options.train_tokenizer) {
    const auto start = std::chrono::steady_clock::now();
    TokenizerTrainOptions train = options.tokenizer_options;
    train.input_files.clear();
    for (const Document& d : split.train) train.input_files.push_back(d.path);
    train_tokenizer(train, options.tokenizer_model);
    report.tokenizer_seconds = seconds_since(start);
  }
  const Tokenizer tokenizer(options.tokenizer_model);
  report.vocab_size = tokenizer.vocab_size();

  const auto start = std::chrono::steady_clock::now();
  report.train = encode_split("train", split.train, tokenizer, options);
  report.val = encode_split("val", split.val, tokenizer, options);
  report.encode_seconds = seconds_since(start);
  write_manifest(options, report, split);
  return report;
}

}  // namespace flashtrain::data

#include "flashtrain/data/prepare.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "flashtrain/data/atomic_file.h"
#include "flashtrain/data/error.h"
#include "jsonl.h"
#include "ordered_encoder.h"
#include "progress_line.h"
#include "shard_sequence.h"

namespace flashtrain::data {
namespace {

constexpr const char* kManifestName = "prepare.json";
constexpr const char* kSplits[] = {"train", "val"};
using ShardNames = std::map<std::string, std::set<std::string>>;  // split -> file names

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

// The shard names prepare.json in `output_dir` records per split; nothing if
// there is none or it cannot be read. Only plain shard names count, so an
// edited manifest cannot point prepare at any other file.
ShardNames recorded_shards(const std::filesystem::path& output_dir) {
  ShardNames recorded;
  std::ifstream in(output_dir / kManifestName);
  if (!in) return recorded;
  const nlohmann::json manifest = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!manifest.is_object()) return recorded;
  for (const char* split : kSplits) {
    const auto part = manifest.find(split);
    if (part == manifest.end() || !part->is_object() || !part->contains("shards") ||
        !part->at("shards").is_array())
      continue;
    for (const nlohmann::json& name : part->at("shards")) {
      if (name.is_string() && is_shard_name(name.get<std::string>(), split))
        recorded[split].insert(name.get<std::string>());
    }
  }
  return recorded;
}

// The shard files in the output directory that are prepare's own: those that
// prepare.json records. Only these are replaced or removed. While a run writes
// (or after it was interrupted) prepare.json is a record marked
// "complete": false that lists every shard the run may have written, so the
// next run still knows them. Any other shard file there is someone else's:
// prepare refuses to start rather than overwrite it or leave it among the
// splits (the loader reads every train_*.bin of a folder).
class OutputShards {
 public:
  explicit OutputShards(std::string output_dir)
      : output_dir_(std::move(output_dir)), owned_(recorded_shards(output_dir_)) {
    refuse_foreign_shards();
  }

  // Records `name` as this run's before its file is written.
  void claim(const std::string& split, const std::string& name) {
    if (owned_[split].insert(name).second || !record_written_) write_in_progress_record();
  }

  // Removes the split's shards of an earlier run that this run did not rewrite.
  void remove_unwritten(const std::string& split, const std::vector<std::string>& written) {
    std::set<std::string> kept;
    for (const std::string& path : written) kept.insert(std::filesystem::path(path).filename().string());
    for (const std::string& name : owned_[split]) {
      if (!kept.count(name)) std::filesystem::remove(std::filesystem::path(output_dir_) / name);
    }
    owned_[split] = kept;
  }

 private:
  void refuse_foreign_shards() const {
    std::vector<std::string> foreign;
    for (const char* split : kSplits) {
      for (const std::string& name : shard_files_in(output_dir_, split)) {
        const auto owned = owned_.find(split);
        if (owned == owned_.end() || !owned->second.count(name)) foreign.push_back(name);
      }
    }
    if (foreign.empty()) return;
    std::string names;
    for (std::size_t i = 0; i < foreign.size() && i < 5; ++i) names += (i ? ", " : "") + foreign[i];
    if (foreign.size() > 5) names += " and " + std::to_string(foreign.size() - 5) + " more";
    throw DataError("output directory '" + output_dir_ + "' holds shard files that no " + kManifestName +
                    " there records as written by prepare: " + names +
                    ". prepare does not overwrite or remove files it did not write, and the loader "
                    "would read them as part of the splits; choose another --output (an empty "
                    "directory), or move those files away");
  }

  void write_in_progress_record() {
    nlohmann::json record{{"complete", false},
                          {"note", "a prepare run is writing this directory or was interrupted; "
                                   "the shards listed are its own"}};
    for (const char* split : kSplits) record[split]["shards"] = owned_[split];
    write_file_atomically((std::filesystem::path(output_dir_) / kManifestName).string(), record.dump(2) + "\n");
    record_written_ = true;
  }

  std::string output_dir_;
  ShardNames owned_;
  bool record_written_ = false;
};

// Both splits in one pass over the documents in name order, so that a
// JSON-lines file is read (and decompressed) once for both; each split's
// documents go into its own shards, in its own name order, as two passes
// would write them.
void encode_splits(const std::vector<Document>& documents, const DocumentSplit& split, const Tokenizer& tokenizer,
                   const PrepareOptions& o, OutputShards& output, PrepareReport& report) {
  // The splits are sorted subsequences of `documents` (unique names).
  std::vector<char> in_val(documents.size(), 0);
  for (std::size_t i = 0, v = 0; i < documents.size() && v < split.val.size(); ++i)
    if (documents[i].name == split.val[v].name) in_val[i] = 1, ++v;
  const TokenFormat format = format_for_vocab_size(tokenizer.vocab_size());
  ShardSequence train(o.output_dir, "train", format, o.shard_tokens,
                      [&](const std::string& name) { output.claim("train", name); });
  ShardSequence val(o.output_dir, "val", format, o.shard_tokens,
                    [&](const std::string& name) { output.claim("val", name); });
  report.train.documents = static_cast<std::int64_t>(split.train.size());
  report.val.documents = static_cast<std::int64_t>(split.val.size());
  ProgressLine progress("train+val", static_cast<std::int64_t>(documents.size()), o.progress);
  encode_in_order(documents, tokenizer, o.threads, o.text_field, [&](std::size_t index, EncodedDocument&& doc) {
    SplitReport& r = in_val[index] ? report.val : report.train;
    (in_val[index] ? val : train).append(doc.tokens);
    r.tokens += static_cast<std::int64_t>(doc.tokens.size());
    r.bytes += doc.bytes;
    progress.update(static_cast<std::int64_t>(index + 1), report.train.tokens + report.val.tokens,
                    report.train.bytes + report.val.bytes);
  });
  progress.finish(static_cast<std::int64_t>(documents.size()), report.train.tokens + report.val.tokens,
                  report.train.bytes + report.val.bytes);
  report.train.shards = train.finish();
  output.remove_unwritten("train", report.train.shards);
  report.val.shards = val.finish();
  output.remove_unwritten("val", report.val.shards);
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
      {"complete", true},
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
      {"text_field", o.text_field},
      {"val_fraction", o.val_fraction},
      {"split_seed", o.split_seed},
      {"shard_tokens", o.shard_tokens},
      {"train", split_json(r.train, split.train, false)},
      {"val", split_json(r.val, split.val, true)},
      {"seconds", {{"tokenizer", r.tokenizer_seconds}, {"encode", r.encode_seconds}}},
  };
  write_file_atomically((std::filesystem::path(o.output_dir) / kManifestName).string(),
                        manifest.dump(2) + "\n");
}

// SentencePiece trains on text files: the texts of the JSON-lines training
// documents go into one (a hidden file in the output directory, removed
// after), up to the lines the tokenizer samples from. "" when there are none.
std::string tokenizer_text_of_jsonl(const std::vector<Document>& documents, const PrepareOptions& o) {
  const std::int64_t most_lines = o.tokenizer_options.max_training_lines;
  const std::filesystem::path path = std::filesystem::path(o.output_dir) / ".tokenizer-text.tmp";
  std::ofstream out;
  JsonlCursor cursor;
  std::int64_t lines = 0;
  for (const Document& d : documents) {
    if (d.line < 0) continue;
    if (!out.is_open()) {
      out.open(path, std::ios::binary | std::ios::trunc);
      if (!out) throw DataError("cannot write '" + path.string() + "'");
    }
    const std::string text = jsonl_text(cursor.line_of(d), o.text_field, d);
    out << text << '\n';
    lines += 1 + static_cast<std::int64_t>(std::count(text.begin(), text.end(), '\n'));
    if (most_lines > 0 && lines >= most_lines) break;
  }
  if (!out.is_open()) return "";
  out.close();
  if (!out) throw DataError("cannot write '" + path.string() + "'");
  return path.string();
}

}  // namespace

PrepareReport prepare_shards(const PrepareOptions& options) {
  check_options(options);
  std::filesystem::create_directories(options.output_dir);
  OutputShards output(options.output_dir);  // refuses before any work if foreign shards are there
  const std::vector<Document> documents = find_documents(options.inputs);
  const DocumentSplit split = split_documents(documents, options.val_fraction, options.split_seed);

  PrepareReport report;
  if (options.train_tokenizer) {
    const auto start = std::chrono::steady_clock::now();
    TokenizerTrainOptions train = options.tokenizer_options;
    train.input_files.clear();
    for (const Document& d : split.train)
      if (d.line < 0) train.input_files.push_back(d.path);
    const std::string jsonl_texts = tokenizer_text_of_jsonl(split.train, options);
    if (!jsonl_texts.empty()) train.input_files.push_back(jsonl_texts);
    try {
      train_tokenizer(train, options.tokenizer_model);
    } catch (...) {
      if (!jsonl_texts.empty()) std::filesystem::remove(jsonl_texts);
      throw;
    }
    if (!jsonl_texts.empty()) std::filesystem::remove(jsonl_texts);
    report.tokenizer_seconds = seconds_since(start);
  }
  const Tokenizer tokenizer(options.tokenizer_model);
  report.vocab_size = tokenizer.vocab_size();

  const auto start = std::chrono::steady_clock::now();
  encode_splits(documents, split, tokenizer, options, output, report);
  report.encode_seconds = seconds_since(start);
  write_manifest(options, report, split);
  return report;
}

}  // namespace flashtrain::data

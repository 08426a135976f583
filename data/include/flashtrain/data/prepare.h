// Turns text documents into train/validation token shards (flashtrain-prepare).
//
// Documents: every input file is one document. An input directory
// contributes its *.txt files (recursively, hidden entries skipped); each
// document is named by its path relative to the input it came from.
// Split: a document goes to validation when a hash of (split_seed, its name)
// falls below val_fraction, so the split is deterministic, independent of
// the order and number of other documents, and holds out whole documents.
// Tokens: each document becomes [bos] + tokenizer.encode(text) + [eos]; the
// documents follow each other in name order, in shards of at most
// shard_tokens tokens named train_000000.bin, ... and val_000000.bin, ...
// Output does not depend on the number of threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "flashtrain/data/tokenizer.h"

namespace flashtrain::data {

struct Document {
  std::string name;  // relative to the input it came from (a JSON line's: "file.jsonl:0000000042")
  std::string path;
  std::int64_t line = -1;  // a JSON-lines document: its line of path (0-based); -1: the whole file
};

// The documents of `inputs` (files and directories), sorted by name. Throws
// DataError for a missing input, an input without documents, or two
// documents with the same name.
std::vector<Document> find_documents(const std::vector<std::string>& inputs);

struct DocumentSplit {
  std::vector<Document> train;
  std::vector<Document> val;
};

// With val_fraction > 0 and at least two documents, validation gets at least
// one document and training keeps at least one.
DocumentSplit split_documents(const std::vector<Document>& documents, double val_fraction,
                              std::uint64_t split_seed);

struct PrepareOptions {
  std::vector<std::string> inputs;
  std::string output_dir;
  // The tokenizer to encode with. With train_tokenizer, a new one is trained
  // on the training documents and written here first.
  std::string tokenizer_model;
  bool train_tokenizer = false;
  TokenizerTrainOptions tokenizer_options;  // input_files is filled in
  double val_fraction = 0.01;
  std::uint64_t split_seed = 0;
  std::int64_t shard_tokens = 100000000;
  int threads = 1;
  bool progress = true;  // a progress line on stderr
  std::string text_field = "text";  // of each JSON line of .jsonl / .jsonl.gz inputs
};

struct SplitReport {
  std::int64_t documents = 0;
  std::int64_t bytes = 0;
  std::int64_t tokens = 0;
  std::vector<std::string> shards;
};

struct PrepareReport {
  SplitReport train;
  SplitReport val;
  int vocab_size = 0;
  double tokenizer_seconds = 0;  // training the tokenizer (0 if loaded)
  double encode_seconds = 0;
};

// Runs the whole preparation; writes the shards and a manifest
// (prepare.json: options, counts, shard names, timings) into output_dir,
// and removes shards of an earlier run that this run did not rewrite. Throws
// DataError, before writing anything, if output_dir holds shard files that its
// prepare.json does not record as prepare's own.
PrepareReport prepare_shards(const PrepareOptions& options);

}  // namespace flashtrain::data

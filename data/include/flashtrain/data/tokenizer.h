// A SentencePiece tokenizer: train a BPE or unigram model from text files,
// load it, encode and decode. Kept in its own library (flashtrain_tokenizer)
// so only the tools that make shards link SentencePiece; the trainer reads
// shards.
//
// Special ids are fixed by training: pad 0, unk 1, bos 2, eos 3.
//
// Newlines: SentencePiece treats text as one line (a newline would become a
// space), so encode() encodes each line on its own and puts the byte piece
// <0x0A> between lines; decode() splits at that piece and joins the decoded
// lines with '\n'. So decode(encode(text)) == text for text in SentencePiece's
// normal form (no repeated, leading or trailing spaces on a line, NFKC).
// Models trained without byte_fallback have no <0x0A>: their newlines are
// dropped (lines run together as if separated by a space).
//
//   TokenizerTrainOptions options;
//   options.input_files = {"corpus/a.txt"};
//   options.vocab_size = 8192;
//   train_tokenizer(options, "tok.model");
//   Tokenizer tok("tok.model");
//   std::vector<std::int32_t> ids = tok.encode("Hello world.");
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace flashtrain::data {

enum class TokenizerModel { kBpe, kUnigram };

// "bpe" / "unigram"; throws std::invalid_argument naming the choices.
TokenizerModel parse_tokenizer_model(std::string_view name);

struct TokenizerTrainOptions {
  std::vector<std::string> input_files;  // one sentence per line; blank lines skipped
  int vocab_size = 8192;
  TokenizerModel model = TokenizerModel::kBpe;
  double character_coverage = 0.9995;
  // Lines sampled for training (0: all). Sampling is seeded, so training is
  // deterministic for given inputs.
  std::int64_t max_training_lines = 2000000;
  // Lines longer than this many bytes are skipped by SentencePiece.
  int max_line_bytes = 8192;
  int threads = 1;
  std::uint32_t seed = 0;
  // Split digits into single tokens (numbers then tokenize uniformly).
  bool split_digits = true;
  // Unknown characters decompose into UTF-8 bytes instead of <unk>.
  bool byte_fallback = true;
};

// Trains a model and writes it atomically to `model_path` (the .model file).
// Throws DataError with SentencePiece's message on failure.
void train_tokenizer(const TokenizerTrainOptions& options, const std::string& model_path);

class Tokenizer {
 public:
  // Throws DataError if the file is missing or not a SentencePiece model.
  explicit Tokenizer(const std::string& model_path);
  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;

  // Encoding and decoding are thread-safe (SentencePiece's processor is).
  // A '\r' before a '\n' is dropped.
  std::vector<std::int32_t> encode(std::string_view text) const;
  std::string decode(const std::vector<std::int32_t>& ids) const;

  int vocab_size() const;
  std::int32_t pad_id() const;
  std::int32_t unk_id() const;
  std::int32_t bos_id() const;
  std::int32_t eos_id() const;
  std::int32_t newline_id() const;  // -1 if the model has no <0x0A> piece
  std::string piece(std::int32_t id) const;
  // The model file's bytes (to export next to a checkpoint).
  std::string serialized_model() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace flashtrain::data

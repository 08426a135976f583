#include "flashtrain/data/tokenizer.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "flashtrain/data/atomic_file.h"
#include "flashtrain/data/error.h"

namespace flashtrain::data {
namespace {

constexpr std::int32_t kPadId = 0;
constexpr std::int32_t kUnkId = 1;
constexpr std::int32_t kBosId = 2;
constexpr std::int32_t kEosId = 3;

// SentencePiece reads training lines from files; this feeds them from ours,
// skipping blank lines (our paragraph separators) and naming unreadable files.
class LineIterator : public sentencepiece::SentenceIterator {
 public:
  explicit LineIterator(const std::vector<std::string>& files) : files_(files) { advance(); }

  bool done() const override { return done_; }
  void Next() override { advance(); }
  const std::string& value() const override { return line_; }
  sentencepiece::util::Status status() const override { return status_; }

 private:
  void advance() {
    while (true) {
      if (in_.is_open() && std::getline(in_, line_)) {
        if (!line_.empty() && line_.back() == '\r') line_.pop_back();
        if (!line_.empty()) return;
        continue;
      }
      if (in_.is_open()) in_.close();
      if (next_file_ == files_.size()) {
        done_ = true;
        return;
      }
      const std::string& path = files_[next_file_++];
      in_.open(path, std::ios::binary);
      if (!in_) {
        status_ = sentencepiece::util::Status(sentencepiece::util::StatusCode::kNotFound,
                                              "cannot read tokenizer training file '" + path + "'");
        done_ = true;
        return;
      }
    }
  }

  const std::vector<std::string>& files_;
  std::size_t next_file_ = 0;
  std::ifstream in_;
  std::string line_;
  bool done_ = false;
  sentencepiece::util::Status status_;
};

void check(const sentencepiece::util::Status& status, const std::string& what) {
  if (!status.ok()) throw DataError(what + ": " + status.ToString());
}

}  // namespace

TokenizerModel parse_tokenizer_model(std::string_view name) {
  if (name == "bpe") return TokenizerModel::kBpe;
  if (name == "unigram") return TokenizerModel::kUnigram;
  throw std::invalid_argument("unknown tokenizer model '" + std::string(name) +
                              "'; choose bpe or unigram");
}

void train_tokenizer(const TokenizerTrainOptions& o, const std::string& model_path) {
  if (o.input_files.empty()) throw DataError("train_tokenizer: no input files");
  if (o.vocab_size < 8) throw DataError("train_tokenizer: vocab_size " + std::to_string(o.vocab_size) + " is too small");
  const std::unordered_map<std::string, std::string> args = {
      {"model_type", o.model == TokenizerModel::kBpe ? "bpe" : "unigram"},
      {"vocab_size", std::to_string(o.vocab_size)},
      {"character_coverage", std::to_string(o.character_coverage)},
      {"input_sentence_size", std::to_string(o.max_training_lines)},
      {"shuffle_input_sentence", "true"},
      {"max_sentence_length", std::to_string(o.max_line_bytes)},
      {"num_threads", std::to_string(o.threads)},
      {"split_digits", o.split_digits ? "true" : "false"},
      {"byte_fallback", o.byte_fallback ? "true" : "false"},
      {"pad_id", std::to_string(kPadId)},
      {"unk_id", std::to_string(kUnkId)},
      {"bos_id", std::to_string(kBosId)},
      {"eos_id", std::to_string(kEosId)},
      // Trained in memory: nothing is written under a model_prefix.
      {"model_prefix", ""},
      {"minloglevel", "1"},
  };
  // The seed drives the line sampling; the lock keeps concurrent trainings
  // from interleaving with SentencePiece's process-wide seed.
  static std::mutex seed_mutex;
  const std::lock_guard<std::mutex> lock(seed_mutex);
  sentencepiece::SetRandomGeneratorSeed(o.seed);
  LineIterator lines(o.input_files);
  std::string model;
  const sentencepiece::util::Status trained = sentencepiece::SentencePieceTrainer::Train(args, &lines, &model);
  // The commonest failure, a vocabulary smaller than the characters the text
  // needs, in our terms (SentencePiece's names its own flags).
  const std::string message = trained.ok() ? "" : std::string(trained.message());
  const std::string too_small = "Vocabulary size is smaller than required_chars. ";  // then "100 vs 357."
  const std::size_t at = message.find(too_small);
  if (at != std::string::npos) {
    std::istringstream counts(message.substr(at + too_small.size()));
    long asked = 0, needed = 0;
    std::string vs;
    counts >> asked >> vs >> needed;
    throw DataError("a vocabulary of " + std::to_string(o.vocab_size) + " pieces is smaller than the " +
                    std::to_string(needed) + " characters and special pieces the text needs; raise the vocabulary "
                    "size (--vocab-size) to at least " + std::to_string(needed));
  }
  check(trained, "SentencePiece training failed");
  write_file_atomically(model_path, model);
}

struct Tokenizer::Impl {
  sentencepiece::SentencePieceProcessor processor;
  std::int32_t newline_id = -1;
};

Tokenizer::Tokenizer(const std::string& model_path) : impl_(std::make_unique<Impl>()) {
  check(impl_->processor.Load(model_path), "cannot load tokenizer model '" + model_path + "'");
  // PieceToId answers unk for a missing piece.
  const int id = impl_->processor.PieceToId("<0x0A>");
  if (id != impl_->processor.unk_id()) impl_->newline_id = id;
}

Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

std::vector<std::int32_t> Tokenizer::encode(std::string_view text) const {
  std::vector<std::int32_t> out;
  std::vector<int> ids;
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = text.find('\n', start);
    std::string_view line = text.substr(start, end == std::string_view::npos ? end : end - start);
    if (end != std::string_view::npos && !line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty()) {
      check(impl_->processor.Encode({line.data(), line.size()}, &ids), "tokenizer encode failed");
      out.insert(out.end(), ids.begin(), ids.end());
    }
    if (end == std::string_view::npos) return out;
    if (impl_->newline_id >= 0) out.push_back(impl_->newline_id);
    start = end + 1;
  }
}

std::string Tokenizer::decode(const std::vector<std::int32_t>& ids) const {
  std::string text, line;
  std::vector<int> segment;
  auto flush = [&] {
    check(impl_->processor.Decode(segment, &line), "tokenizer decode failed");
    text += line;
    segment.clear();
  };
  for (const std::int32_t id : ids) {
    if (impl_->newline_id >= 0 && id == impl_->newline_id) {
      flush();
      text += '\n';
    } else {
      segment.push_back(id);
    }
  }
  flush();
  return text;
}

int Tokenizer::vocab_size() const { return impl_->processor.GetPieceSize(); }
std::int32_t Tokenizer::pad_id() const { return impl_->processor.pad_id(); }
std::int32_t Tokenizer::unk_id() const { return impl_->processor.unk_id(); }
std::int32_t Tokenizer::bos_id() const { return impl_->processor.bos_id(); }
std::int32_t Tokenizer::eos_id() const { return impl_->processor.eos_id(); }
std::int32_t Tokenizer::newline_id() const { return impl_->newline_id; }

std::string Tokenizer::piece(std::int32_t id) const {
  if (id < 0 || id >= vocab_size()) {
    throw DataError("token id " + std::to_string(id) + " is outside the vocabulary (size " +
                    std::to_string(vocab_size()) + ")");
  }
  return impl_->processor.IdToPiece(id);
}

std::string Tokenizer::serialized_model() const {
  return impl_->processor.serialized_model_proto();
}

}  // namespace flashtrain::data

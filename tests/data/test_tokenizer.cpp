// The SentencePiece wrapper, trained on a small generated text.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>

#include "flashtrain/data/error.h"
#include "flashtrain/data/tokenizer.h"
#include "generated_text.h"
#include "test_util.h"

namespace flashtrain::data {
namespace {

using testing::expect_error;
using testing::ScratchDir;

class TokenizerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new ScratchDir;
    for (int f = 0; f < 3; ++f) {
      const std::string path = dir_->file("text" + std::to_string(f) + ".txt");
      testing::write_text(path, testing::generated_document(static_cast<std::uint64_t>(f), 400));
      files_.push_back(path);
    }
    TokenizerTrainOptions options;
    options.input_files = files_;
    options.vocab_size = 600;
    train_tokenizer(options, dir_->file("bpe.model"));
  }
  static void TearDownTestSuite() { delete dir_; }

  static TokenizerTrainOptions options(TokenizerModel model = TokenizerModel::kBpe) {
    TokenizerTrainOptions o;
    o.input_files = files_;
    o.vocab_size = 600;
    o.model = model;
    return o;
  }

  static ScratchDir* dir_;
  static std::vector<std::string> files_;
};

ScratchDir* TokenizerTest::dir_ = nullptr;
std::vector<std::string> TokenizerTest::files_;

TEST_F(TokenizerTest, HasTheRequestedSizeAndSpecialIds) {
  const Tokenizer tok(dir_->file("bpe.model"));
  EXPECT_EQ(tok.vocab_size(), 600);
  EXPECT_EQ(tok.pad_id(), 0);
  EXPECT_EQ(tok.unk_id(), 1);
  EXPECT_EQ(tok.bos_id(), 2);
  EXPECT_EQ(tok.eos_id(), 3);
  EXPECT_EQ(tok.piece(tok.bos_id()), "<s>");
  EXPECT_EQ(tok.piece(tok.eos_id()), "</s>");
  EXPECT_EQ(tok.piece(tok.newline_id()), "<0x0A>");
  expect_error<DataError>([&] { tok.piece(600); }, {"token id 600", "size 600"});
}

TEST_F(TokenizerTest, RoundTripsTextItWasTrainedOn) {
  const Tokenizer tok(dir_->file("bpe.model"));
  const std::string text = testing::generated_document(99, 30);  // same style, unseen
  const std::vector<std::int32_t> ids = tok.encode(text);
  EXPECT_EQ(tok.decode(ids), text);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), tok.newline_id()),
            std::count(text.begin(), text.end(), '\n'));
  EXPECT_EQ(std::count(ids.begin(), ids.end(), tok.unk_id()), 0);
  // BPE merged common words: far fewer tokens than characters.
  EXPECT_LT(ids.size() * 3, text.size()) << ids.size() << " tokens for " << text.size() << " bytes";
}

TEST_F(TokenizerTest, UnseenCharactersFallBackToBytes) {
  const Tokenizer tok(dir_->file("bpe.model"));
  const std::string text = "naïve café ✓ Ω\n\nend";
  const auto ids = tok.encode(text);
  EXPECT_EQ(tok.decode(ids), text);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), tok.unk_id()), 0);
}

TEST_F(TokenizerTest, DigitsAreSingleTokens) {
  const Tokenizer tok(dir_->file("bpe.model"));
  for (const std::int32_t id : tok.encode("In 1987 and 2024 there were 365 days.")) {
    const std::string piece = tok.piece(id);
    EXPECT_LE(std::count_if(piece.begin(), piece.end(), [](unsigned char c) { return std::isdigit(c); }), 1)
        << piece;
  }
}

TEST_F(TokenizerTest, TrainingIsDeterministic) {
  train_tokenizer(options(), dir_->file("again.model"));
  EXPECT_EQ(testing::read_bytes(dir_->file("again.model")), testing::read_bytes(dir_->file("bpe.model")));
}

TEST_F(TokenizerTest, TrainsUnigramToo) {
  train_tokenizer(options(TokenizerModel::kUnigram), dir_->file("unigram.model"));
  const Tokenizer tok(dir_->file("unigram.model"));
  EXPECT_EQ(tok.vocab_size(), 600);
  const std::string text = testing::generated_document(7, 5);
  EXPECT_EQ(tok.decode(tok.encode(text)), text);
  EXPECT_NE(testing::read_bytes(dir_->file("unigram.model")), testing::read_bytes(dir_->file("bpe.model")));
  EXPECT_EQ(parse_tokenizer_model("unigram"), TokenizerModel::kUnigram);
  expect_error<std::invalid_argument>([] { parse_tokenizer_model("wordpiece"); }, {"wordpiece", "bpe or unigram"});
}

TEST_F(TokenizerTest, TrainingErrorsAreClear) {
  TokenizerTrainOptions o = options();
  o.input_files.push_back(dir_->file("missing.txt"));
  expect_error<DataError>([&] { train_tokenizer(o, dir_->file("x.model")); }, {"missing.txt"});
  o = options();
  o.vocab_size = 100000;  // far more pieces than the text has
  expect_error<DataError>([&] { train_tokenizer(o, dir_->file("x.model")); }, {"SentencePiece training failed"});
  EXPECT_FALSE(std::filesystem::exists(dir_->file("x.model")));
}

TEST_F(TokenizerTest, LoadingSomethingElseIsAClearError) {
  expect_error<DataError>([&] { Tokenizer{dir_->file("none.model")}; }, {"cannot load tokenizer model", "none.model"});
  expect_error<DataError>([&] { Tokenizer{files_[0]}; }, {"cannot load tokenizer model", "text0.txt"});
  testing::write_bytes(dir_->file("empty.model"), {});
  expect_error<DataError>([&] { Tokenizer{dir_->file("empty.model")}; }, {"cannot load tokenizer model", "empty.model"});
}

}  // namespace
}  // namespace flashtrain::data

// flashtrain-prepare: documents, the train/val split, and shards that hold
// exactly [bos] + encode(document) + [eos] per document, in name order.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "flashtrain/data/error.h"
#include "flashtrain/data/loader.h"
#include "flashtrain/data/prepare.h"
#include "flashtrain/data/shard_reader.h"
#include "generated_text.h"
#include "test_util.h"

namespace flashtrain::data {
namespace {

namespace fs = std::filesystem;
using testing::expect_error;
using testing::ScratchDir;
using testing::write_text;

std::vector<std::string> names_of(const std::vector<Document>& documents) {
  std::vector<std::string> names;
  for (const auto& d : documents) names.push_back(d.name);
  return names;
}

std::vector<std::int32_t> concatenated_tokens(const std::vector<std::string>& shard_paths) {
  std::vector<std::int32_t> all;
  for (const auto& path : shard_paths) {
    const ShardReader shard(path);
    const auto begin = all.size();
    all.resize(begin + static_cast<std::size_t>(shard.token_count()));
    shard.read(0, shard.token_count(), all.data() + begin);
  }
  return all;
}

TEST(PrepareDocuments, FindsTxtFilesByRelativeName) {
  ScratchDir dir;
  fs::create_directories(dir.path() / "corpus/b/deep");
  fs::create_directories(dir.path() / "corpus/.cache");
  write_text(dir.file("corpus/b/deep/z.txt"), "z");
  write_text(dir.file("corpus/a.txt"), "a");
  write_text(dir.file("corpus/notes.md"), "skipped: not .txt");
  write_text(dir.file("corpus/.hidden.txt"), "skipped: hidden");
  write_text(dir.file("corpus/.cache/x.txt"), "skipped: hidden directory");
  write_text(dir.file("single.txt"), "s");
  const auto docs = find_documents({dir.file("corpus"), dir.file("single.txt")});
  EXPECT_EQ(names_of(docs), (std::vector<std::string>{"a.txt", "b/deep/z.txt", "single.txt"}));
  EXPECT_EQ(docs[1].path, dir.file("corpus/b/deep/z.txt"));
}

TEST(PrepareDocuments, BadInputsAreClearErrors) {
  ScratchDir dir;
  fs::create_directories(dir.path() / "empty");
  write_text(dir.file("a.txt"), "a");
  fs::create_directories(dir.path() / "other");
  write_text(dir.file("other/a.txt"), "a");
  expect_error<DataError>([&] { find_documents({dir.file("nope")}); }, {"input", "nope", "does not exist"});
  write_text(dir.file("rows.parquet"), "PAR1");
  expect_error<DataError>([&] { find_documents({dir.file("rows.parquet")}); },
                          {"rows.parquet", "is Parquet", "parquet_to_jsonl.py"});
  expect_error<DataError>([&] { find_documents({dir.file("empty")}); },
                          {"empty", "holds no *.txt, *.jsonl, *.jsonl.gz or *.jsonl.zst file"});
  expect_error<DataError>([&] { find_documents({dir.file("a.txt"), dir.file("other")}); },
                          {"two documents are named 'a.txt'"});
}

std::vector<Document> numbered_documents(int n, int first = 0) {
  std::vector<Document> docs;
  for (int i = first; i < first + n; ++i) docs.push_back({"doc" + std::to_string(i) + ".txt", ""});
  return docs;
}

TEST(PrepareSplit, HoldsOutAboutTheFractionAndEachDocumentDecidesAlone) {
  const auto docs = numbered_documents(2000);
  const DocumentSplit split = split_documents(docs, 0.1, 0);
  EXPECT_EQ(split.train.size() + split.val.size(), 2000u);
  // Binomial(2000, 0.1): mean 200, sd 13.4; allow 5 sd.
  EXPECT_NEAR(static_cast<double>(split.val.size()), 200.0, 67.0);
  // A document's side does not depend on the other documents.
  const DocumentSplit half = split_documents(numbered_documents(1000, 1000), 0.1, 0);
  for (const auto& d : half.val) {
    EXPECT_TRUE(std::any_of(split.val.begin(), split.val.end(), [&](const Document& v) { return v.name == d.name; }));
  }
  // Another seed draws another split.
  EXPECT_NE(names_of(split_documents(docs, 0.1, 1).val), names_of(split.val));
}

TEST(PrepareSplit, SmallSetsStillGetBothSides) {
  const DocumentSplit two = split_documents(numbered_documents(2), 0.01, 0);
  EXPECT_EQ(two.train.size(), 1u);
  EXPECT_EQ(two.val.size(), 1u);
  const DocumentSplit none = split_documents(numbered_documents(5), 0.0, 0);
  EXPECT_EQ(none.val.size(), 0u);
  EXPECT_EQ(split_documents(numbered_documents(1), 0.5, 0).train.size(), 1u);
  expect_error<DataError>([] { split_documents(numbered_documents(3), 1.0, 0); }, {"val_fraction", "[0, 1)"});
}

class PrepareRun : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_.path() / "docs");
    for (int d = 0; d < 40; ++d) {
      write_text(dir_.file("docs/doc" + std::to_string(100 + d) + ".txt"),
                 testing::generated_document(static_cast<std::uint64_t>(d), 12 + d % 7));
    }
  }

  // The 40 documents' texts, in name order.
  std::vector<std::string> document_texts() const {
    std::vector<std::string> texts;
    for (int d = 0; d < 40; ++d) {
      std::ifstream in(dir_.file("docs/doc" + std::to_string(100 + d) + ".txt"), std::ios::binary);
      texts.emplace_back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    }
    return texts;
  }

  PrepareOptions options(const std::string& out, int threads) const {
    PrepareOptions o;
    o.inputs = {dir_.file("docs")};
    o.output_dir = dir_.file(out);
    o.tokenizer_model = dir_.file(out + "/tokenizer.model");
    o.train_tokenizer = true;
    o.tokenizer_options.vocab_size = 600;
    o.val_fraction = 0.1;
    o.shard_tokens = 3000;
    o.threads = threads;
    o.progress = false;
    return o;
  }

  ScratchDir dir_;
};

TEST_F(PrepareRun, ShardsHoldEachDocumentInOrder) {
  const PrepareOptions o = options("out", 3);
  const PrepareReport report = prepare_shards(o);

  const Tokenizer tok(o.tokenizer_model);
  const DocumentSplit split = split_documents(find_documents(o.inputs), 0.1, 0);
  ASSERT_FALSE(split.val.empty());
  for (const auto& [documents, shards] : {std::pair{split.train, report.train.shards},
                                          std::pair{split.val, report.val.shards}}) {
    std::vector<std::int32_t> expected;
    for (const Document& d : documents) {
      std::ifstream in(d.path);
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      expected.push_back(tok.bos_id());
      const auto ids = tok.encode(text);
      expected.insert(expected.end(), ids.begin(), ids.end());
      expected.push_back(tok.eos_id());
      EXPECT_EQ(tok.decode(ids), text) << d.name;
    }
    EXPECT_EQ(concatenated_tokens(shards), expected);
    for (std::size_t i = 0; i < shards.size(); ++i) {
      const ShardReader shard(shards[i]);
      EXPECT_EQ(shard.format(), TokenFormat::kUint16);
      if (i + 1 < shards.size()) EXPECT_EQ(shard.token_count(), 3000);
      else EXPECT_LE(shard.token_count(), 3000);
    }
  }
  EXPECT_GE(report.train.shards.size(), 3u);
  EXPECT_EQ(report.train.documents + report.val.documents, 40);
  EXPECT_EQ(report.vocab_size, 600);

  std::ifstream manifest_file(dir_.file("out/prepare.json"));
  const auto manifest = nlohmann::json::parse(manifest_file);
  EXPECT_EQ(manifest["train"]["tokens"], report.train.tokens);
  EXPECT_EQ(manifest["val"]["document_names"], nlohmann::json(names_of(split.val)));
  EXPECT_EQ(manifest["tokenizer"]["vocab_size"], 600);
  EXPECT_EQ(manifest["tokenizer"]["model"], "tokenizer.model") << "relative to the output directory";

  // The loader reads what prepare wrote.
  ShardLoader loader({find_shards(dir_.file("out/train_*.bin")), 4, 64, 0, 0, 1, true, 600});
  EXPECT_EQ(loader.next().tokens.size(), 4u * 65u);
}

// One JSON line per document, {"id": ..., "text": ...}; gzipped when `gzip`.
enum class Compression { kNone, kGzip, kZstd };

// zstd frames of `content`, each of at most `frame` bytes of it (a file may hold several).
std::string zstd_frames(const std::string& content, std::size_t frame) {
  std::string out;
  for (std::size_t at = 0; at < content.size(); at += frame) {
    const std::size_t size = std::min(frame, content.size() - at);
    std::string compressed(ZSTD_compressBound(size), '\0');
    const std::size_t n = ZSTD_compress(compressed.data(), compressed.size(), content.data() + at, size, 3);
    EXPECT_FALSE(ZSTD_isError(n));
    out += compressed.substr(0, n);
  }
  return out;
}

void write_json_lines(const std::string& path, const std::vector<std::string>& texts, Compression compression,
                      const std::string& field = "text") {
  std::string content;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    content += nlohmann::json{{"id", i}, {field, texts[i]}}.dump() + "\n";
    if (i == 2) content += "\n";  // a blank line: no document
  }
  if (compression == Compression::kNone) return write_text(path, content);
  if (compression == Compression::kZstd) return write_text(path, zstd_frames(content, content.size() / 3 + 1));
  gzFile out = gzopen(path.c_str(), "wb");
  ASSERT_NE(out, nullptr);
  const auto size = static_cast<unsigned>(content.size());
  ASSERT_EQ(gzwrite(out, content.data(), size), static_cast<int>(size));
  ASSERT_EQ(gzclose(out), Z_OK);
}

// The 40 documents as JSON lines, 20 in a .jsonl, 10 in a .jsonl.gz and 10 in a
// .jsonl.zst (three frames), give the tokens the 40 text files give (the same
// order: names sort in file order).
TEST_F(PrepareRun, JsonLinesGiveTheTokensTextFilesGive) {
  PrepareOptions from_text = options("text", 2);
  from_text.val_fraction = 0.0;
  const PrepareReport text_report = prepare_shards(from_text);
  const std::vector<std::string> texts = document_texts();
  fs::create_directories(dir_.path() / "lines");
  write_json_lines(dir_.file("lines/a.jsonl"), {texts.begin(), texts.begin() + 20}, Compression::kNone);
  write_json_lines(dir_.file("lines/b.jsonl.gz"), {texts.begin() + 20, texts.begin() + 30}, Compression::kGzip);
  write_json_lines(dir_.file("lines/c.jsonl.zst"), {texts.begin() + 30, texts.end()}, Compression::kZstd);

  PrepareOptions from_lines = options("lines_out", 3);
  from_lines.inputs = {dir_.file("lines")};
  from_lines.val_fraction = 0.0;
  from_lines.train_tokenizer = false;
  from_lines.tokenizer_model = from_text.tokenizer_model;
  const PrepareReport lines_report = prepare_shards(from_lines);
  EXPECT_EQ(lines_report.train.documents, 40);
  EXPECT_EQ(lines_report.train.bytes, text_report.train.bytes);
  EXPECT_EQ(concatenated_tokens(lines_report.train.shards), concatenated_tokens(text_report.train.shards));
  const auto docs = find_documents(from_lines.inputs);
  EXPECT_EQ(docs[3].name, "a.jsonl:0000000005");  // line 4 is blank
  EXPECT_EQ(docs[20].name, "b.jsonl.gz:0000000001");
  EXPECT_EQ(docs[30].name, "c.jsonl.zst:0000000001");

  // A tokenizer trained on JSON lines (their texts, through a temporary file).
  PrepareOptions trained = options("lines_trained", 2);
  trained.inputs = {dir_.file("lines/b.jsonl.gz"), dir_.file("lines/c.jsonl.zst")};
  const PrepareReport trained_report = prepare_shards(trained);
  EXPECT_EQ(trained_report.vocab_size, 600);
  EXPECT_EQ(trained_report.train.documents + trained_report.val.documents, 20);
  EXPECT_FALSE(fs::exists(dir_.file("lines_trained/.tokenizer-text.tmp")));
}

TEST_F(PrepareRun, BadJsonLinesNameTheFileAndLine) {
  fs::create_directories(dir_.path() / "bad");
  write_text(dir_.file("bad/x.jsonl"), "{\"text\": \"fine\"}\nnot json\n");
  write_text(dir_.file("bad/y.jsonl"), "{\"content\": \"no text field\"}\n");
  PrepareOptions o = options("bad_out", 2);
  o.val_fraction = 0.0;
  o.inputs = {dir_.file("bad/x.jsonl")};
  expect_error<DataError>([&] { prepare_shards(o); }, {"x.jsonl' line 2", "is not a JSON object"});
  o.inputs = {dir_.file("bad/y.jsonl")};
  expect_error<DataError>([&] { prepare_shards(o); },
                          {"y.jsonl' line 1", "no string field 'text'", "--text-field"});
  write_json_lines(dir_.file("bad/content.jsonl"), document_texts(), Compression::kNone, "content");
  o.inputs = {dir_.file("bad/content.jsonl")};
  o.text_field = "content";
  o.output_dir = dir_.file("content_out");
  o.tokenizer_model = dir_.file("content_out/tokenizer.model");
  EXPECT_EQ(prepare_shards(o).train.documents, 40);
  write_text(dir_.file("bad/empty.jsonl"), "\n\n");
  expect_error<DataError>([&] { find_documents({dir_.file("bad/empty.jsonl")}); },
                          {"empty.jsonl", "holds no JSON line"});
  // A .zst cut short, or not zstd at all: the file named, never a partial read.
  const std::string frames = zstd_frames("{\"text\": \"one\"}\n{\"text\": \"two\"}\n", 1 << 20);
  write_text(dir_.file("bad/cut.jsonl.zst"), frames.substr(0, frames.size() - 3));
  expect_error<DataError>([&] { find_documents({dir_.file("bad/cut.jsonl.zst")}); },
                          {"cut.jsonl.zst", "truncated"});
  write_text(dir_.file("bad/plain.jsonl.zst"), "{\"text\": \"one\"}\n");
  expect_error<DataError>([&] { find_documents({dir_.file("bad/plain.jsonl.zst")}); },
                          {"plain.jsonl.zst", "not zstd data"});
}

TEST_F(PrepareRun, OutputDoesNotDependOnThreads) {
  const PrepareReport one = prepare_shards(options("one", 1));
  const PrepareReport four = prepare_shards(options("four", 4));
  EXPECT_EQ(testing::read_bytes(dir_.file("one/tokenizer.model")),
            testing::read_bytes(dir_.file("four/tokenizer.model")));
  ASSERT_EQ(one.train.shards.size(), four.train.shards.size());
  for (std::size_t i = 0; i < one.train.shards.size(); ++i) {
    EXPECT_EQ(testing::read_bytes(one.train.shards[i]), testing::read_bytes(four.train.shards[i]));
  }
  EXPECT_EQ(concatenated_tokens(one.val.shards), concatenated_tokens(four.val.shards));
}

// The shard files in `dir` (train_*.bin and val_*.bin), by name.
std::vector<std::string> shard_files(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() == ".bin" && (name.rfind("train_", 0) == 0 || name.rfind("val_", 0) == 0))
      names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> file_names(const std::vector<std::string>& paths) {
  std::vector<std::string> names;
  for (const auto& path : paths) names.push_back(fs::path(path).filename().string());
  return names;
}

TEST_F(PrepareRun, RefusesShardFilesItDidNotWrite) {
  fs::create_directories(dir_.path() / "out");
  write_text(dir_.file("out/train_000007.bin"), "someone else's shard");
  write_text(dir_.file("out/val_000000.bin"), "someone else's validation shard");
  expect_error<DataError>([&] { prepare_shards(options("out", 2)); },
                          {"out' holds shard files that no prepare.json there records", "train_000007.bin",
                           "val_000000.bin", "does not overwrite or remove", "choose another --output"});
  EXPECT_EQ(testing::read_text(dir_.file("out/train_000007.bin")), "someone else's shard");
  EXPECT_EQ(testing::read_text(dir_.file("out/val_000000.bin")), "someone else's validation shard");
  EXPECT_EQ(shard_files(dir_.file("out")), (std::vector<std::string>{"train_000007.bin", "val_000000.bin"}))
      << "nothing written beside them";
  EXPECT_FALSE(fs::exists(dir_.file("out/prepare.json")));
}

TEST_F(PrepareRun, RefusesAShardItsManifestDoesNotList) {
  const PrepareReport first = prepare_shards(options("out", 2));
  write_text(dir_.file("out/train_000099.bin"), "copied in by hand");
  const auto before = testing::read_bytes(first.train.shards[0]);
  expect_error<DataError>([&] { prepare_shards(options("out", 2)); }, {"train_000099.bin", "--output"});
  EXPECT_EQ(testing::read_text(dir_.file("out/train_000099.bin")), "copied in by hand");
  EXPECT_EQ(testing::read_bytes(first.train.shards[0]), before);
}

TEST_F(PrepareRun, ReplacesItsOwnShardsAndRemovesThoseItDidNotRewrite) {
  PrepareOptions many = options("out", 2);
  many.shard_tokens = 1000;
  const PrepareReport first = prepare_shards(many);
  const PrepareReport second = prepare_shards(options("out", 2));  // 3000 tokens a shard: fewer
  ASSERT_LT(second.train.shards.size(), first.train.shards.size());
  std::vector<std::string> expected = file_names(second.train.shards);
  for (const auto& name : file_names(second.val.shards)) expected.push_back(name);
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(shard_files(dir_.file("out")), expected);
  std::ifstream manifest_file(dir_.file("out/prepare.json"));
  const auto manifest = nlohmann::json::parse(manifest_file);
  EXPECT_EQ(manifest["complete"], true);
  EXPECT_EQ(manifest["train"]["shards"], nlohmann::json(file_names(second.train.shards)));
}

TEST_F(PrepareRun, AnInterruptedRunsShardsAreStillItsOwn) {
  // What a run leaves when it is killed while writing: the record of the
  // shards it claimed, some of them written.
  fs::create_directories(dir_.path() / "out");
  for (const char* name : {"train_000000.bin", "train_000001.bin", "train_000042.bin", "val_000000.bin"})
    write_text(dir_.file(std::string("out/") + name), "half done");
  write_text(dir_.file("out/prepare.json"), R"({"complete": false,
    "train": {"shards": ["train_000000.bin", "train_000001.bin", "train_000042.bin"]},
    "val": {"shards": ["val_000000.bin", "../outside.bin"]}})");
  write_text(dir_.file("outside.bin"), "not a shard name: never touched");
  const PrepareReport report = prepare_shards(options("out", 2));
  EXPECT_FALSE(fs::exists(dir_.file("out/train_000042.bin"))) << "its own, not rewritten: removed";
  EXPECT_EQ(testing::read_text(dir_.file("outside.bin")), "not a shard name: never touched");
  EXPECT_EQ(shard_files(dir_.file("out")).size(), report.train.shards.size() + report.val.shards.size());
}

TEST_F(PrepareRun, MissingTokenizerIsAClearError) {
  PrepareOptions o = options("out", 1);
  o.train_tokenizer = false;
  expect_error<DataError>([&] { prepare_shards(o); }, {"tokenizer model", "does not exist", "--train-tokenizer"});
}

int run(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST_F(PrepareRun, CommandLineTool) {
  const std::string tool = FLASHTRAIN_PREPARE_TOOL;
  EXPECT_EQ(run(tool + " --output " + dir_.file("cli") + " --train-tokenizer --vocab-size 600 " +
                "--shard-tokens 5000 --val-fraction 0.1 --quiet " + dir_.file("docs") + " > " +
                dir_.file("cli.log")),
            0);
  EXPECT_TRUE(fs::exists(dir_.file("cli/train_000000.bin")));
  EXPECT_TRUE(fs::exists(dir_.file("cli/val_000000.bin")));
  EXPECT_TRUE(fs::exists(dir_.file("cli/tokenizer.model")));
  EXPECT_EQ(run(tool + " --output x --bogus 2> /dev/null"), 2);
  EXPECT_EQ(run(tool + " --output x --vocab-size many in 2> /dev/null"), 2);
  // No tokenizer and no --train-tokenizer: a usage error that says what to pass.
  EXPECT_EQ(run(tool + " --output " + dir_.file("cli2") + " --quiet " + dir_.file("docs") + " 2> " +
                dir_.file("no_tokenizer.log")),
            2);
  const std::string no_tokenizer = testing::read_text(dir_.file("no_tokenizer.log"));
  EXPECT_NE(no_tokenizer.find("there is no tokenizer model at"), std::string::npos) << no_tokenizer;
  EXPECT_NE(no_tokenizer.find("--train-tokenizer --vocab-size N"), std::string::npos) << no_tokenizer;
  // A missing input is a usage error, named.
  EXPECT_EQ(run(tool + " --output " + dir_.file("cli3") + " " + dir_.file("missing.txt") + " 2> " +
                dir_.file("missing.log")),
            2);
  EXPECT_NE(testing::read_text(dir_.file("missing.log")).find("input '" + dir_.file("missing.txt") + "' does not exist"),
            std::string::npos);
  // Too small a vocabulary: said in our options' terms, not SentencePiece's.
  EXPECT_EQ(run(tool + " --output " + dir_.file("cli4") + " --train-tokenizer --vocab-size 20 --quiet " +
                dir_.file("docs") + " 2> " + dir_.file("small.log")),
            1);
  const std::string small = testing::read_text(dir_.file("small.log"));
  EXPECT_NE(small.find("a vocabulary of 20 pieces is smaller than the "), std::string::npos) << small;
  EXPECT_NE(small.find("--vocab-size"), std::string::npos) << small;
  EXPECT_EQ(small.find("character_coverage"), std::string::npos) << small;
  EXPECT_EQ(small.find("prepare: prepare:"), std::string::npos) << small;  // one program name
}

}  // namespace
}  // namespace flashtrain::data

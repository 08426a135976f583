// `flashtrain prepare` (flashtrain-prepare's command line, data/) and
// `flashtrain tune` (whether the tensor-core fused kernels take a config's
// recurrent blocks, and how, flashrnn_ops/tune), run as processes.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "flashtrain/data/shard_reader.h"
#include "flashtrain_process.h"
#include "generated_text.h"  // tests/data: English-like documents
#include "scratch_dir.h"

namespace flashtrain::trainer {
namespace {

namespace fs = std::filesystem;
using testing::expect_clean_error;
using testing::ProcessRun;
using testing::run_flashtrain;
using testing::ScratchDir;

bool contains(const std::string& text, const std::string& words) { return text.find(words) != std::string::npos; }

TEST(FlashtrainPrepare, WritesShardsAndReportsThem) {
  ScratchDir dir;
  for (int d = 0; d < 20; ++d)
    testing::write_file(dir / ("docs/doc" + std::to_string(d) + ".txt"),
                        data::testing::generated_document(std::uint64_t(d), 10));
  const fs::path out = dir / "shards";
  const ProcessRun r = run_flashtrain({"prepare", "--output", out.string(), "--train-tokenizer", "--vocab-size", "500",
                                       "--val-fraction", "0.2", "--quiet", "--threads", "1", (dir / "docs").string()});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "flashtrain prepare: wrote " + out.string())) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("train +[0-9]+ documents"))) << r.output;
  EXPECT_TRUE(contains(r.output, "vocab 500 (trained here)")) << r.output;
  ASSERT_TRUE(fs::exists(out / "tokenizer.model"));
  ASSERT_TRUE(fs::exists(out / "val_000000.bin"));
  const data::ShardReader train((out / "train_000000.bin").string());
  EXPECT_GT(train.token_count(), 1000);

  // A model.vocab_size below the tokenizer's 500 pieces is refused at the key
  // before training, not at the first token beyond it.
  const ProcessRun small = run_flashtrain(
      {"--config", "configs/quickstart.toml", "--tokenizer.path=" + (out / "tokenizer.model").string(),
       "--data.train_shards=" + (out / "train_*.bin").string(), "--data.val_shards=" + (out / "val_*.bin").string(),
       "--model.vocab_size=100", "--training.device=cpu", "--job.dump_folder=" + (dir / "run").string()});
  testing::expect_clean_error(small, 2, "model.vocab_size (100) is smaller than the 500 pieces of the tokenizer");
}

TEST(FlashtrainPrepare, UsageErrorsAndHelpNameTheSubcommand) {
  expect_clean_error(run_flashtrain({"prepare", "--output", "x", "--bogus"}), 2,
                     "flashtrain prepare: unknown option --bogus");
  expect_clean_error(run_flashtrain({"prepare", "--output", "x"}), 2, "no input files or directories given");
  const ProcessRun help = run_flashtrain({"prepare", "--help"});
  EXPECT_EQ(help.status, 0);
  EXPECT_TRUE(contains(help.output, "usage: flashtrain prepare --output DIR")) << help.output;
  ScratchDir dir;
  testing::write_file(dir / "doc.txt", "a document");
  // No tokenizer and no --train-tokenizer: a usage error, said once.
  const ProcessRun no_tokenizer =
      run_flashtrain({"prepare", "--output", (dir / "out").string(), "--quiet", (dir / "doc.txt").string()});
  expect_clean_error(no_tokenizer, 2, "flashtrain prepare: there is no tokenizer model at");
  EXPECT_FALSE(contains(no_tokenizer.output, "prepare: prepare:")) << no_tokenizer.output;
}

// The paper's 12-head LSTM on the H200 fixture: the tensor-core kernels take it,
// and the report shows their tiling. No data files are needed.
TEST(FlashtrainTune, ExplainsTheChoiceForTheConfigsRecurrentBlocks) {
  const ProcessRun r = run_flashtrain({"tune", "--config", "configs/lstm_12head.toml", "--device", "h200"});
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "on NVIDIA H200")) << r.output;
  EXPECT_TRUE(contains(r.output, "(published properties)")) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("== lstm blocks \\(layers 0-[0-9]+ of [0-9]+\\): lstm 12x64 batch "
                                                     "[0-9]+ bf16")))
      << r.output;
  // The tensor-core kernels the fused backend runs: their tiling on the device
  // (an H200 has clusters: 2 CTAs of 4 warps per 64-dim LSTM head).
  EXPECT_TRUE(contains(r.output, "tensor-core kernels, lstm 12x64 batch")) << r.output;
  EXPECT_TRUE(contains(r.output, "2 CTAs per head (thread-block cluster, sm_90)")) << r.output;
  EXPECT_TRUE(contains(r.output, "128 threads = 32 x 4 warps")) << r.output;
  EXPECT_TRUE(contains(r.output, "-> the fused backend runs")) << r.output;

  // Overrides reach the shape; an sLSTM config gets its own cell.
  const ProcessRun fp32 = run_flashtrain({"tune", "--config", "configs/slstm_12head.toml", "--device=a100",
                                          "--training.local_batch_size=8", "--training.mixed_precision=fp32"});
  ASSERT_EQ(fp32.status, 0) << fp32.output;
  EXPECT_TRUE(std::regex_search(fp32.output, std::regex("== slstm blocks .*: slstm 12x64 batch 8 fp32"))) << fp32.output;
}

TEST(FlashtrainTune, SaysWhenThereIsNothingToTuneOrNoFit) {
  const ProcessRun transformer = run_flashtrain({"tune", "--config", "configs/transformer.toml", "--device", "h100"});
  EXPECT_EQ(transformer.status, 0) << transformer.output;
  EXPECT_TRUE(contains(transformer.output, "has no recurrent blocks")) << transformer.output;
  // A head dimension the fused kernel cannot tile: the fallback and the reason.
  const ProcessRun odd = run_flashtrain({"tune", "--config", "configs/lstm_12head.toml", "--device", "a100",
                                         "--model.kind=gru", "--model.dim=144", "--model.n_heads=2",
                                         "--model.head_dim=72"});
  EXPECT_EQ(odd.status, 0) << odd.output;
  EXPECT_TRUE(contains(odd.output, "do not run\n  binding constraint ")) << odd.output;
  EXPECT_TRUE(contains(odd.output, "-> backend=auto runs the alternating backend")) << odd.output;
}

TEST(FlashtrainTune, BadDevicesAreUsageErrors) {
  expect_clean_error(run_flashtrain({"tune", "--config", "configs/lstm_12head.toml", "--device", "v100"}), 2,
                     "unknown device fixture 'v100'");
  expect_clean_error(run_flashtrain({"tune", "--config", "configs/lstm_12head.toml", "--device", "cuda:x"}), 2,
                     "the ordinal after 'cuda:'");
  // No GPU (CI): the live device cannot be read, and the message says what to do.
  const ProcessRun live = run_flashtrain({"tune", "--config", "configs/lstm_12head.toml"});
  if (live.status == 0) GTEST_SKIP() << "a GPU is present: " << live.output;
  expect_clean_error(live, 2, "name a device with --device a100, h100, h200 or l4");
}

}  // namespace
}  // namespace flashtrain::trainer

// Relations between keys, the world size at start-up, and the input files.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "flashtrain/config/consistency.h"
#include "flashtrain/config/load.h"
#include "flashtrain/config/schema.h"
#include "flashtrain/models/block_kind.h"
#include "temp_files.h"

namespace flashtrain::config {
namespace {

// what() of the error that resolving the defaults with `flags` throws.
std::string error_of(const std::vector<std::string>& flags) {
  try {
    resolve_defaults(flags);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Consistency, RelationsBetweenKeys) {
  EXPECT_EQ(error_of({"--model.dim=770"}),
            "--model.dim=770: error: model.dim (770) is not divisible by model.n_heads (12), so "
            "model.head_dim = 0 (dim / n_heads) has no value; change them or set model.head_dim");
  EXPECT_EQ(error_of({"--data.train_shards="}),
            "--data.train_shards=: error: data.train_shards is empty and data.task is not set; "
            "name the training shards or a state-tracking task");
  EXPECT_EQ(error_of({"--data.val_shards="}),
            "--data.val_shards=: error: validation.every is 250 but data.val_shards is empty; "
            "name validation shards or set validation.every = 0");
  EXPECT_EQ(error_of({"--parallelism.nproc=8", "--parallelism.data_parallel=4"}),
            "--parallelism.data_parallel=4: error: parallelism.data_parallel (4) differs from "
            "parallelism.nproc (8), the number of processes flashtrain starts");
  EXPECT_EQ(error_of({"--parallelism.data_parallel=3", "--training.global_batch_size=32"}),
            "--training.global_batch_size=32: error: training.global_batch_size (32) is not a "
            "multiple of training.local_batch_size x parallelism.data_parallel = 8 x 3 = 24");
  EXPECT_EQ(error_of({"--lr_scheduler.decay=wsd", "--lr_scheduler.decay_ratio=0.95"}),
            "--lr_scheduler.decay_ratio=0.95: error: lr_scheduler.warmup_steps (100) plus the wsd "
            "decay (decay_ratio x steps = 950) exceed training.steps (1000)");
  EXPECT_EQ(error_of({"--data.task=parity", "--data.task_train_min_len=50"}),
            "--data.task_train_min_len=50: error: data.task_train_min_len (50) is greater than "
            "data.task_train_max_len (40)");
  EXPECT_EQ(error_of({"--data.task=parity", "--data.task_train_min_len=1"}),
            "--data.task_train_min_len=1: error: data.task_train_min_len (1) is shorter than the "
            "2 tokens of the shortest parity sequence");
  EXPECT_EQ(error_of({"--data.task=s5", "--model.vocab_size=100"}),
            "--model.vocab_size=100: error: model.vocab_size (100) is smaller than the 121-token "
            "vocabulary of task s5; set 0 to use the task's");
}

// Task batches are padded to their split's max_len: data.seq_len does not bound them.
TEST(Consistency, TaskLengthsAreNotBoundBySeqLen) {
  EXPECT_EQ(error_of({"--data.task=parity", "--data.seq_len=16", "--data.task_val_max_len=256"}),
            "no error");
}

TEST(Consistency, PlainStructureTakesRecurrentLayersOnly) {
  EXPECT_EQ(error_of({"--model.structure=plain", "--model.kind=gru"}), "no error");
  EXPECT_EQ(error_of({"--model.structure=plain", "--model.n_layers=2", "--model.kind=lstm,slstm"}),
            "--model.kind=lstm,slstm: error: model.structure = plain stacks lstm, gru and elman layers, "
            "but model.kind gives layer 1 the kind slstm; use model.structure = residual for slstm "
            "blocks");
  const std::string scan = error_of({"--model.structure=plain", "--model.kind=linear_scan"});
  EXPECT_NE(scan.find("layer 0 the kind linear_scan"), std::string::npos) << scan;
}

// The config knows the block kinds from the models' one list (models/block_kind.h):
// each row is a choice of model.kind in the table's order, and its columns decide
// the checks (plain or not, recurrent heads or none).
TEST(Consistency, BlockKindsComeFromTheModelsList) {
  std::vector<std::string> names;
  for (const models::BlockKindInfo& row : models::kBlockKinds) {
    const std::string name(row.name);
    names.push_back(name);
    EXPECT_EQ(models::find_block_kind(name), &row);
    EXPECT_EQ(is_multihead_rnn_kind(name), !row.cell.empty()) << name;
    const std::string plain = error_of({"--model.structure=plain", "--model.kind=" + name});
    EXPECT_EQ(plain == "no error", row.plain) << name << ": " << plain;
    // 6 heads of 14 = 84 != 96: only kinds whose heads split the state refuse it.
    const std::string heads = error_of({"--model.kind=" + name, "--model.dim=96", "--model.n_heads=6",
                                        "--model.head_dim=14"});
    EXPECT_EQ(heads != "no error", row.heads && !row.cell.empty()) << name << ": " << heads;
  }
  EXPECT_EQ(model_kinds(), names);
  EXPECT_EQ(models::plain_kind_names(), "lstm, gru and elman");
  EXPECT_EQ(models::find_block_kind("lsmt"), nullptr);
}

// Caught with the config's keys, not later by the attention block.
TEST(Consistency, AttentionHeadsHaveAnEvenWidth) {
  EXPECT_EQ(error_of({"--model.kind=transformer", "--model.dim=6", "--model.n_heads=2", "--model.head_dim=3"}),
            "--model.n_heads=2: error: transformer blocks split model.dim (6) into model.n_heads (2) heads "
            "of an even width (rotary positions rotate pairs of units); dim / n_heads = 3 is odd");
  const std::string indivisible =
      error_of({"--model.kind=transformer", "--model.dim=10", "--model.n_heads=4", "--model.head_dim=2"});
  EXPECT_NE(indivisible.find("it is not divisible"), std::string::npos) << indivisible;
  EXPECT_EQ(error_of({"--model.kind=transformer", "--model.dim=8", "--model.n_heads=2", "--model.head_dim=4"}),
            "no error");
}

TEST(Consistency, TaskLengthsTheGeneratorCannotDraw) {
  // Modular arithmetic without brackets has odd lengths only; data/ says so.
  const std::string what = error_of({"--data.task=modular_arithmetic", "--data.task_train_min_len=4",
                                     "--data.task_train_max_len=4"});
  EXPECT_EQ(what.rfind("--data.task_train_max_len=4: error: data.task_train_min_len and "
                       "data.task_train_max_len do not suit the task: ", 0), 0u)
      << what;
  EXPECT_NE(what.find("odd"), std::string::npos) << what;
}

TEST(Consistency, ScheduleWarmupMayOutlastAShortRun) {
  // A smoke run of 10 steps with the default 100 warm-up steps is fine...
  EXPECT_NO_THROW(resolve_defaults({"--training.steps=10"}));
  // ...but wsd's warm-up and final decay must not overlap.
  const Config c = resolve_defaults({"--lr_scheduler.decay=wsd", "--training.steps=1000",
                                     "--lr_scheduler.decay_ratio=0.9", "--lr_scheduler.warmup_steps=100"})
                       .config;
  EXPECT_EQ(wsd_decay_steps(c), 900);
  EXPECT_NE(error_of({"--lr_scheduler.decay=wsd", "--lr_scheduler.decay_ratio=0.9",
                      "--lr_scheduler.warmup_steps=101"}),
            "no error");
}

TEST(Consistency, TaskModeNeedsNoShardsOrTokenizer) {
  const Config c = resolve_defaults({"--data.task=even_pairs", "--data.train_shards=",
                                     "--data.val_shards=", "--tokenizer.path="})
                       .config;
  EXPECT_EQ(c.data.task, "even_pairs");
}

TEST(Consistency, LinearScanBlocksHaveNoHeads) {
  EXPECT_NO_THROW(resolve_defaults({"--model.kind=linear_scan", "--model.dim=100"}));
  EXPECT_NO_THROW(resolve_defaults({"--model.kind=transformer", "--model.head_dim=32"}));
}

TEST(WorldSize, MustMatchDataParallelAndDivideTheGlobalBatch) {
  const ResolvedConfig r = load_config_text(
      "[training]\nlocal_batch_size = 4\nglobal_batch_size = 48\n", "c.toml");
  EXPECT_NO_THROW(check_world_size(r, 1));
  EXPECT_NO_THROW(check_world_size(r, 4));
  EXPECT_EQ(accumulation_steps(r.config, 1), 12);
  EXPECT_EQ(accumulation_steps(r.config, 4), 3);
  try {
    check_world_size(r, 8);
    FAIL() << "8 x 4 does not divide 48";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "c.toml:3:21: error: training.global_batch_size (48) is not a multiple of "
              "training.local_batch_size x the world size = 4 x 8 = 32");
  }
  const ResolvedConfig fixed = load_config_text("[parallelism]\ndata_parallel = 2\n", "p.toml");
  try {
    check_world_size(fixed, 4);
    FAIL() << "data_parallel 2 accepted 4 processes";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "p.toml:2:17: error: parallelism.data_parallel is 2 but the launcher started 4 "
              "processes; set it to 0 to follow the launcher");
  }
}

TEST(InputFiles, MissingFilesAreErrorsAtTheirKeys) {
  const testing::TempDir dir;
  const std::string d = dir.path();
  dir.write("tok.model", "x");
  dir.write("train_000.bin", "x");
  dir.write("ckpt/step_1/model.bin", "x");
  const std::string config = "[tokenizer]\npath = \"" + d + "/tok.model\"\n[data]\ntrain_shards = \"" +
                             d + "/train_*.bin\"\nval_shards = \"" + d + "/train_*.bin\"\n";
  EXPECT_NO_THROW(check_input_files(load_config_text(config, "c.toml")));
  EXPECT_NO_THROW(check_input_files(
      load_config_text(config, "c.toml", {"--checkpoint.resume=" + d + "/ckpt/step_1"})));

  struct Case {
    std::string flag;
    std::string what;
  };
  const std::vector<Case> cases = {
      {"--tokenizer.path=" + d + "/none.model",
       "tokenizer.path '" + d + "/none.model' is not a file"},
      {"--data.train_shards=" + d + "/nothing_*.bin",
       "no file matches data.train_shards '" + d + "/nothing_*.bin'"},
      {"--data.val_shards=" + d + "/val_*.bin", "no file matches data.val_shards '" + d + "/val_*.bin'"},
      {"--checkpoint.resume=" + d + "/ckpt/step_2",
       "checkpoint.resume '" + d + "/ckpt/step_2' is not a checkpoint directory (nor latest or none)"},
  };
  for (const Case& c : cases) {
    try {
      check_input_files(load_config_text(config, "c.toml", {c.flag}));
      ADD_FAILURE() << "no error for " << c.flag;
    } catch (const ConfigError& e) {
      EXPECT_EQ(std::string(e.what()), c.flag + ": error: " + c.what);
    }
  }
  // Set through flashtrain's --resume: the error names that flag.
  try {
    check_input_files(load_config_text(config, "c.toml", {"--resume=" + d + "/nowhere"}));
    ADD_FAILURE() << "no error for --resume=" << d << "/nowhere";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "--resume=" + d + "/nowhere: error: checkpoint.resume '" + d +
                                         "/nowhere' is not a checkpoint directory (nor latest or none)");
  }
  // The LM configs' corpus, not built: the error says how to build it and
  // points at the quickstart (ctest runs in the build tree, which has no .data).
  ASSERT_FALSE(std::filesystem::exists(".data/corpus"));
  try {
    check_input_files(load_config_text("[tokenizer]\npath = \".data/corpus/tokenizer.model\"\n", "c.toml"));
    ADD_FAILURE() << "no error for the missing corpus";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("bash data/corpus/build_corpus.sh"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("configs/quickstart.toml"), std::string::npos) << e.what();
  }
  // From the file: the position of the value.
  try {
    check_input_files(load_config_text("[tokenizer]\npath = \"" + d + "/x\"\n", "c.toml"));
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.file(), "c.toml");
    EXPECT_EQ(e.line(), 2);
    EXPECT_EQ(e.column(), 8);
  }
}

}  // namespace
}  // namespace flashtrain::config

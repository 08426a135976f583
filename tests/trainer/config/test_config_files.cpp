// Every config in configs/ is valid, and the shipped ones say what they claim.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include "flashtrain/config/consistency.h"
#include "flashtrain/config/load.h"
#include "flashtrain/config/print.h"

namespace flashtrain::config {
namespace {

namespace fs = std::filesystem;

const fs::path kRepo = FLASHTRAIN_SOURCE_DIR;

std::set<std::string> config_stems() {
  std::set<std::string> stems;
  for (const auto& entry : fs::directory_iterator(kRepo / "configs"))
    if (entry.path().extension() == ".toml") stems.insert(entry.path().stem().string());
  return stems;
}

ResolvedConfig load_shipped(const std::string& stem) {
  return load_config((kRepo / "configs" / (stem + ".toml")).string());
}

TEST(ConfigFiles, EveryConfigLoadsAndNamesItsJobAfterItself) {
  const std::set<std::string> stems = config_stems();
  for (const char* expected :
       {"quickstart", "lstm_12head", "lstm_1head", "slstm_12head", "transformer", "tasks_parity"})
    EXPECT_EQ(stems.count(expected), 1u) << "configs/" << expected << ".toml is missing";
  for (const std::string& stem : stems) {
    SCOPED_TRACE("configs/" + stem + ".toml");
    try {
      const Config config = load_shipped(stem).config;
      EXPECT_EQ(config.job.name, stem);
      EXPECT_EQ(config.job.dump_folder, "outputs/" + stem);
      // What --print-config shows for it reads back the same.
      EXPECT_TRUE(load_config_text(to_toml(config), "printed.toml").config == config);
    } catch (const ConfigError& e) {
      ADD_FAILURE() << e.what();
    }
  }
}

TEST(ConfigFiles, QuickstartIsATinyLstmOnTheSmallCorpus) {
  const Config c = load_shipped("quickstart").config;
  EXPECT_EQ(c.model.kind, std::vector<std::string>{"lstm"});
  EXPECT_EQ(c.model.vocab_size, 4096);
  EXPECT_LE(c.model.dim, 256);
  EXPECT_EQ(c.data.train_shards, ".data/corpus-small/train_*.bin");
  EXPECT_EQ(c.data.val_shards, ".data/corpus-small/val_*.bin");
  EXPECT_EQ(c.tokenizer.path, ".data/corpus-small/tokenizer.model");
  EXPECT_EQ(c.training.mixed_precision, "fp32");
}

TEST(ConfigFiles, QuickstartInputsExistAfterSetup) {
  if (!fs::exists(kRepo / ".data/corpus-small/tokenizer.model"))
    GTEST_SKIP() << "no .data/corpus-small (scripts/setup.sh builds it)";
  const fs::path previous = fs::current_path();
  fs::current_path(kRepo);  // the config's paths are relative to the repository
  EXPECT_NO_THROW(check_input_files(load_shipped("quickstart")));
  fs::current_path(previous);
}

TEST(ConfigFiles, TheLanguageModelsDifferOnlyInTheirModel) {
  const Config lstm = load_shipped("lstm_12head").config;
  EXPECT_EQ(lstm.model.dim, 768);
  EXPECT_EQ(lstm.model.n_heads, 12);
  EXPECT_EQ(lstm.model.head_dim, 64);
  EXPECT_EQ(lstm.data.seq_len, 1024);
  // The micro-batch is probed at start-up; the global batch is fixed.
  EXPECT_TRUE(lstm.training.auto_local_batch());
  EXPECT_EQ(lstm.training.global_batch_size, 64);
  EXPECT_EQ(load_shipped("lstm_1head").config.model.n_heads, 1);
  EXPECT_EQ(load_shipped("slstm_12head").config.model.kind, std::vector<std::string>{"slstm"});
  EXPECT_EQ(load_shipped("transformer").config.model.kind, std::vector<std::string>{"transformer"});
  for (const char* other : {"lstm_1head", "slstm_12head", "transformer"}) {
    Config config = load_shipped(other).config;
    EXPECT_EQ(config.model.dim, lstm.model.dim) << other;
    EXPECT_EQ(config.model.n_layers, lstm.model.n_layers) << other;
    // Everything outside [model] and [job] is the same.
    config.model = lstm.model;
    config.job = lstm.job;
    EXPECT_TRUE(config == lstm) << other;
  }
}

TEST(ConfigFiles, ParityFollowsTheTasksRecipe) {
  const Config c = load_shipped("tasks_parity").config;
  EXPECT_EQ(c.data.task, "parity");
  EXPECT_EQ(c.data.task_train_min_len, 3);
  EXPECT_EQ(c.data.task_train_max_len, 40);
  EXPECT_EQ(c.data.task_val_max_len, 256);
  EXPECT_EQ(c.data.task_val_long_max_len, 1024);
  EXPECT_EQ(c.data.seq_len, 256);
  EXPECT_EQ(c.optimizer.lr, 1e-3);
  EXPECT_EQ(c.training.local_batch_size, 256);
  EXPECT_EQ(c.optimizer.beta2, 0.99);
  EXPECT_EQ(c.optimizer.weight_decay, 0.1);
  EXPECT_EQ(c.training.target_loss, 0.0);  // the whole schedule: no early stop
  EXPECT_EQ(c.training.steps, 100000);
  // The papers' LSTM in Delétang et al.'s geometry: one plain layer of 256,
  // one head as wide as the model.
  EXPECT_EQ(c.model.structure, "plain");
  EXPECT_EQ(c.model.n_layers, 1);
  EXPECT_EQ(c.model.dim, 256);
  EXPECT_EQ(c.model.n_heads, 1);
  EXPECT_EQ(c.model.resolved_head_dim(), 256);
}

}  // namespace
}  // namespace flashtrain::config

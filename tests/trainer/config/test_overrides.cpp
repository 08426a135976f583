// Command-line overrides: typed values, the same checks as files, and errors
// that name the flag.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "flashtrain/config/load.h"
#include "flashtrain/config/overrides.h"

namespace flashtrain::config {
namespace {

// The ConfigError that resolving the defaults with `flags` throws.
ConfigError error_of(const std::vector<std::string>& flags) {
  try {
    resolve_defaults(flags);
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for " << flags.back();
  return ConfigError("", 0, 0, "");
}

TEST(Overrides, RecognisesOnlyDottedDoubleDashFlags) {
  EXPECT_TRUE(is_override_flag("--training.steps=100"));
  EXPECT_TRUE(is_override_flag("--debug.deterministic"));
  EXPECT_TRUE(is_override_flag("--optimzer.lr=1"));  // an override, if a misspelt one
  EXPECT_FALSE(is_override_flag("--config"));
  EXPECT_FALSE(is_override_flag("--config=configs/lstm_12head.toml"));
  EXPECT_FALSE(is_override_flag("--print-config"));
  EXPECT_FALSE(is_override_flag("-training.steps=1"));
  EXPECT_FALSE(is_override_flag("training.steps=1"));
}

TEST(Overrides, ParseEachTypeOfValue) {
  const Config c = resolve_defaults({"--training.steps=123", "--optimizer.lr=.5",
                                     "--optimizer.weight_decay=+1e-2", "--model.dropout=0",
                                     "--debug.deterministic", "--checkpoint.enable=false",
                                     "--job.name=run 7", "--data.train_shards=/x/train_*.bin",
                                     "--model.n_layers=3", "--model.kind=lstm,transformer,gru"})
                       .config;
  EXPECT_EQ(c.training.steps, 123);
  EXPECT_EQ(c.optimizer.lr, 0.5);
  EXPECT_EQ(c.optimizer.weight_decay, 0.01);
  EXPECT_EQ(c.model.dropout, 0.0);
  EXPECT_TRUE(c.debug.deterministic);
  EXPECT_FALSE(c.checkpoint.enable);
  EXPECT_EQ(c.job.name, "run 7");
  EXPECT_EQ(c.data.train_shards, "/x/train_*.bin");
  EXPECT_EQ(c.model.kind, (std::vector<std::string>{"lstm", "transformer", "gru"}));
}

TEST(Overrides, LocalBatchSizeTakesAutoOrANumber) {
  const Config automatic = resolve_defaults({"--training.local_batch_size=auto"}).config;
  EXPECT_TRUE(automatic.training.auto_local_batch());
  EXPECT_EQ(automatic.training.local_batch_size, TrainingConfig::kAutoLocalBatch);
  // A number after "auto" (in the file or an earlier flag) wins, and the other way round.
  const ResolvedConfig fixed =
      load_config_text("[training]\nlocal_batch_size = \"auto\"\n", "x.toml", {"--training.local_batch_size=32"});
  EXPECT_EQ(fixed.config.training.local_batch_size, 32);
  EXPECT_TRUE(load_config_text("[training]\nlocal_batch_size = 8\n", "x.toml", {"--training.local_batch_size=auto"})
                  .config.training.auto_local_batch());

  const ConfigError big = error_of({"--training.local_batch_size=big"});
  EXPECT_EQ(big.file(), "--training.local_batch_size=big");
  EXPECT_EQ(big.message(), "'local_batch_size' in [training] must be an integer or \"auto\"; got 'big'");
  EXPECT_EQ(error_of({"--training.local_batch_size=0"}).message(),
            "'local_batch_size' in [training] must be in [1, 16777216] or \"auto\"; got 0");
  EXPECT_EQ(error_of({"--training.local_batch_size"}).message(),
            "'local_batch_size' in [training] needs a value: --training.local_batch_size=<integer>|auto");
  EXPECT_EQ(error_of({"--training.steps=auto"}).message(), "'steps' in [training] must be an integer; got 'auto'");
}

TEST(Overrides, OverrideTheFileAndTheLaterFlagWins) {
  const ResolvedConfig r = load_config_text("[training]\nsteps = 10\nseed = 1\n", "x.toml",
                                            {"--training.steps=20", "--training.steps=30"});
  EXPECT_EQ(r.config.training.steps, 30);
  EXPECT_EQ(r.config.training.seed, 1);
  ASSERT_NE(r.origin("training.steps"), nullptr);
  EXPECT_EQ(r.origin("training.steps")->file, "--training.steps=30");
  ASSERT_NE(r.origin("training.seed"), nullptr);
  EXPECT_EQ(r.origin("training.seed")->file, "x.toml");
  EXPECT_EQ(r.origin("training.seed")->line, 3);
  EXPECT_EQ(r.origin("training.seed")->column, 8);
  EXPECT_EQ(r.origin("training.grad_clip"), nullptr);  // a default
}

TEST(Overrides, ErrorsNameTheFlag) {
  struct Case {
    std::string flag;
    std::string what;
  };
  const std::vector<Case> cases = {
      {"--optimizer.lerning_rate=1e-3",
       "--optimizer.lerning_rate=1e-3: error: unknown key 'lerning_rate' in [optimizer]; did you "
       "mean 'lr'?"},
      {"--optimzer.lr=1e-3",
       "--optimzer.lr=1e-3: error: unknown section [optimzer]; did you mean [optimizer]?"},
      {"--training.steps=ten",
       "--training.steps=ten: error: 'steps' in [training] must be an integer; got 'ten'"},
      {"--training.steps=1.5",
       "--training.steps=1.5: error: 'steps' in [training] must be an integer; got '1.5'"},
      {"--training.steps=", "--training.steps=: error: 'steps' in [training] must be an integer; "
                            "got nothing"},
      {"--training.steps=0",
       "--training.steps=0: error: 'steps' in [training] must be >= 1; got 0"},
      {"--training.steps",
       "--training.steps: error: 'steps' in [training] needs a value: --training.steps=<integer>"},
      {"--training.seed=99999999999999999999",
       "--training.seed=99999999999999999999: error: 'seed' in [training] is too large for a "
       "64-bit integer; got 99999999999999999999"},
      {"--optimizer.lr=abc",
       "--optimizer.lr=abc: error: 'lr' in [optimizer] must be a float; got 'abc'"},
      {"--optimizer.lr=inf",
       "--optimizer.lr=inf: error: 'lr' in [optimizer] must be a finite number; got inf"},
      {"--debug.deterministic=yes",
       "--debug.deterministic=yes: error: 'deterministic' in [debug] must be a boolean; got 'yes'"},
      {"--model.backend=fusd",
       "--model.backend=fusd: error: 'backend' in [model] must be one of vanilla, alternating, "
       "fused, auto; got 'fusd'; did you mean 'fused'?"},
      {"--model.kind=lstm,,gru",
       "--model.kind=lstm,,gru: error: element 2 of 'kind' in [model] must be one of lstm, gru, "
       "elman, slstm, linear_scan, transformer; got ''"},
      {"--model.kind=lstn",
       "--model.kind=lstn: error: 'kind' in [model] must be one of lstm, gru, elman, slstm, linear_scan, "
       "transformer; got 'lstn'; did you mean 'lstm'?"},
      {"--job.name=", "--job.name=: error: 'name' in [job] must not be empty"},
      {"--training.steps.max=3",
       "--training.steps.max=3: error: an override names one section and one key: "
       "--section.key=value"},
      {"--.steps=3",
       "--.steps=3: error: an override names one section and one key: --section.key=value"},
      {"--training=3",
       "--training=3: error: not a config override; overrides look like --section.key=value"},
  };
  for (const Case& c : cases) {
    const ConfigError e = error_of({c.flag});
    EXPECT_EQ(std::string(e.what()), c.what);
    EXPECT_EQ(e.file(), c.flag);
    EXPECT_EQ(e.line(), 0);
  }
}

TEST(Overrides, BrokenRelationBlamesTheFlagThatBrokeIt) {
  try {
    load_config_text("[training]\nlocal_batch_size = 8\nglobal_batch_size = 64\n", "x.toml",
                     {"--training.local_batch_size=7"});
    FAIL() << "loaded a global batch that local batches do not divide";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.file(), "--training.local_batch_size=7");
    EXPECT_EQ(e.message(),
              "training.global_batch_size (64) is not a multiple of training.local_batch_size x "
              "parallelism.nproc = 7 x 1 = 7");
  }
}

TEST(Overrides, FlagCanRepairWhatTheFileBroke) {
  // Relations are checked after the last flag, not after the file.
  const ResolvedConfig r = load_config_text("[model]\nn_heads = 5\n", "x.toml", {"--model.n_heads=4"});
  EXPECT_EQ(r.config.model.n_heads, 4);
}

}  // namespace
}  // namespace flashtrain::config

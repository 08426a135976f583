#include <gtest/gtest.h>

#include "flashtrain/config/load.h"
#include "flashtrain/trainer/cli/command_line.h"

namespace flashtrain::trainer {
namespace {

CommandLine parse(std::vector<const char*> args) {
  args.insert(args.begin(), "flashtrain");
  return parse_command_line(int(args.size()), args.data());
}

void expect_usage_error(std::vector<const char*> args, const std::string& words) {
  try {
    parse(args);
    ADD_FAILURE() << "accepted; expected an error about: " << words;
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(CommandLine, TrainIsTheDefaultSubcommand) {
  const CommandLine cl = parse({"--config", "configs/quickstart.toml", "--training.steps=5", "--print-config"});
  EXPECT_EQ(cl.subcommand, Subcommand::kTrain);
  EXPECT_EQ(cl.config_path, "configs/quickstart.toml");
  EXPECT_TRUE(cl.print_config);
  EXPECT_EQ(cl.overrides, (std::vector<std::string>{"--training.steps=5"}));
}

TEST(CommandLine, OverridesKeepTheirOrderAndResumeBecomesOne) {
  const CommandLine cl = parse({"train", "--optimizer.lr=1", "--resume", "--config=x.toml", "--optimizer.lr=2"});
  EXPECT_EQ(cl.config_path, "x.toml");
  EXPECT_EQ(cl.overrides,
            (std::vector<std::string>{"--optimizer.lr=1", "--resume=latest", "--optimizer.lr=2"}));
  EXPECT_EQ(parse({"tasks", "--resume=none"}).overrides, (std::vector<std::string>{"--resume=none"}));
  EXPECT_EQ(parse({"--resume=out/ckpt/step_00000010"}).overrides,
            (std::vector<std::string>{"--resume=out/ckpt/step_00000010"}));
  // --profile[=N]: training.profile_steps, 5 when bare.
  EXPECT_EQ(parse({"tasks", "--profile"}).overrides, (std::vector<std::string>{"--profile=5"}));
  EXPECT_EQ(parse({"--profile=3"}).overrides, (std::vector<std::string>{"--profile=3"}));
  EXPECT_THROW(parse({"eval", "--profile"}), UsageError);
  EXPECT_THROW(parse({"--profile=0"}), UsageError);
  EXPECT_EQ(config::resolve_defaults({"--profile=3"}).config.training.profile_steps, 3);
}

TEST(CommandLine, SampleOptions) {
  const CommandLine cl = parse({"sample", "--config", "c.toml", "--prompt", "Once upon", "--max-new-tokens=12",
                                "--temperature", "0.7", "--seed=9", "--checkpoint", "ck"});
  EXPECT_EQ(cl.subcommand, Subcommand::kSample);
  EXPECT_EQ(cl.prompt, "Once upon");
  EXPECT_EQ(cl.max_new_tokens, 12);
  EXPECT_DOUBLE_EQ(cl.temperature, 0.7);
  EXPECT_EQ(cl.seed, 9u);
  EXPECT_EQ(cl.checkpoint, "ck");
  EXPECT_TRUE(cl.cuda_graph);
  EXPECT_FALSE(parse({"sample", "--prompt=a", "--cuda-graph=off"}).cuda_graph);
  EXPECT_TRUE(parse({"sample", "--prompt=a", "--cuda-graph", "on"}).cuda_graph);
}

TEST(CommandLine, ExportAndEvalOptions) {
  EXPECT_EQ(parse({"export", "--output", "out/x"}).output, "out/x");
  EXPECT_EQ(parse({"eval", "--checkpoint=c"}).checkpoint, "c");
  EXPECT_EQ(parse({"help"}).subcommand, Subcommand::kHelp);
  EXPECT_EQ(parse({"eval", "--help"}).subcommand, Subcommand::kHelp);
}

TEST(CommandLine, PreparePassesItsArgumentsThroughAndTuneTakesADevice) {
  const CommandLine prepare = parse({"prepare", "--output", "o", "--config", "docs"});
  EXPECT_EQ(prepare.subcommand, Subcommand::kPrepare);
  EXPECT_EQ(prepare.tool_args, (std::vector<std::string>{"--output", "o", "--config", "docs"}));
  EXPECT_TRUE(prepare.config_path.empty()) << "prepare's arguments are its own";
  const CommandLine tune = parse({"tune", "--config", "c.toml", "--device=h100", "--training.local_batch_size=8"});
  EXPECT_EQ(tune.subcommand, Subcommand::kTune);
  EXPECT_EQ(tune.device, "h100");
  EXPECT_EQ(tune.overrides, (std::vector<std::string>{"--training.local_batch_size=8"}));
  expect_usage_error({"train", "--device=h100"}, "not an option of 'train'");
}

TEST(CommandLine, BadInputIsAUsageError) {
  expect_usage_error({"trian"}, "unknown subcommand 'trian'");
  expect_usage_error({"--confg", "x"}, "unknown option '--confg'");
  expect_usage_error({"--config"}, "--config needs a value");
  expect_usage_error({"train", "--prompt=hi"}, "not an option of 'train'");
  expect_usage_error({"export", "--resume"}, "--resume is an option of train and tasks");
  expect_usage_error({"sample", "--config=c"}, "sample needs --prompt=TEXT or --prompt-file=FILE");
  expect_usage_error({"sample", "--prompt=a", "--prompt-file=p.txt"}, "(one of them)");
  EXPECT_EQ(parse({"sample", "--prompt-file", "p.txt"}).prompt_file, "p.txt");
  expect_usage_error({"sample", "--prompt=a", "--max-new-tokens=0"}, "integer >= 1");
  expect_usage_error({"sample", "--prompt=a", "--temperature=-1"}, "number >= 0");
  expect_usage_error({"sample", "--prompt=a", "--seed=x"}, "got 'x'");
  expect_usage_error({"sample", "--prompt=a", "--cuda-graph=yes"}, "--cuda-graph needs on or off, got 'yes'");
  expect_usage_error({"--config", "a.toml", "stray"}, "unexpected argument 'stray'");
  expect_usage_error({"--resume="}, "needs latest, none or a checkpoint directory");
}

TEST(CommandLine, EachSubcommandHasItsOwnHelp) {
  EXPECT_EQ(parse({"eval", "--help"}).help_topic, Subcommand::kEval);
  EXPECT_FALSE(parse({"--help"}).help_topic.has_value());
  EXPECT_FALSE(parse({"help"}).help_topic.has_value());
  EXPECT_EQ(parse({"help", "train"}).help_topic, Subcommand::kTrain);  // as `train --help`
  EXPECT_EQ(parse({"help", "tasks"}).subcommand, Subcommand::kHelp);
  EXPECT_EQ(parse({"help", "prepare"}).tool_args, (std::vector<std::string>{"--help"}));
  expect_usage_error({"help", "trian"}, "help takes one subcommand");
  expect_usage_error({"help", "train", "eval"}, "got 'train ...'");
  const std::string eval = usage_text(Subcommand::kEval);
  EXPECT_NE(eval.find("usage: flashtrain eval "), std::string::npos) << eval;
  EXPECT_NE(eval.find("--checkpoint DIR"), std::string::npos) << eval;
  EXPECT_NE(eval.find("--config FILE"), std::string::npos) << eval;
  for (const char* other : {"--prompt", "--nproc", "--resume", "--device", "subcommands:"})
    EXPECT_EQ(eval.find(other), std::string::npos) << other << " in eval's help:\n" << eval;
  const std::string sample = usage_text(Subcommand::kSample);
  EXPECT_NE(sample.find("--temperature T"), std::string::npos) << sample;
  EXPECT_EQ(sample.find("--output"), std::string::npos) << sample;
  EXPECT_NE(usage_text(Subcommand::kTasks).find("--resume[=WHERE]"), std::string::npos);
}

TEST(CommandLine, UsageNamesEverySubcommand) {
  const std::string text = usage_text();
  for (const char* name : {"train", "eval", "sample", "export", "tasks", "tune", "prepare", "--print-config", "--device"})
    EXPECT_NE(text.find(name), std::string::npos) << name;
}

}  // namespace
}  // namespace flashtrain::trainer

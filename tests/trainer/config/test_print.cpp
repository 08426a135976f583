// print-config (to_toml) and the config hash.
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>

#include "flashtrain/config/load.h"
#include "flashtrain/config/print.h"
#include "flashtrain/config/schema.h"

namespace flashtrain::config {
namespace {

// A config far from the defaults, with values that are easy to print wrong.
Config unusual_config() {
  return resolve_defaults({
                              "--job.name=quote \" backslash \\ tab \t unicode \xc3\xa9",
                              "--job.description=line one\nline two",
                              "--model.n_layers=3",
                              "--model.kind=lstm,transformer,linear_scan",
                              "--model.ffn_factor=0.3333333333333333",
                              "--model.rope_theta=500000",
                              "--model.norm_eps=1e-6",
                              "--optimizer.lr=0.0003",
                              "--optimizer.weight_decay=0",
                              "--training.seed=9007199254740993",
                              "--debug.deterministic=true",
                          })
      .config;
}

TEST(PrintConfig, ReadsBackToTheSameConfigAndHash) {
  for (const Config& config : {Config{}, unusual_config()}) {
    const std::string printed = to_toml(config);
    const ResolvedConfig reread = load_config_text(printed, "printed.toml");
    EXPECT_TRUE(reread.config == config) << printed;
    EXPECT_EQ(config_hash(reread.config), config_hash(config));
    // And printing is a fixed point.
    EXPECT_EQ(to_toml(reread.config), printed);
  }
}

TEST(PrintConfig, EveryKeyFollowsItsDocComment) {
  const std::string printed = to_toml(Config{});
  for (const KeySpec& key : schema().keys()) {
    std::string comment = "# " + std::string(key.doc);
    if (const std::string allowed = key.allowed(); !allowed.empty())
      comment += " (" + allowed + ")";
    const std::string line = comment + "\n" + std::string(key.name) + " = ";
    EXPECT_NE(printed.find(line), std::string::npos) << "no documented line for " << key.dotted_name();
  }
  for (const SectionSpec& section : schema().sections())
    EXPECT_NE(printed.find("\n[" + std::string(section.name) + "]\n"), std::string::npos);
}

TEST(PrintConfig, ShowsValuesAsTomlLiterals) {
  const std::string printed = to_toml(unusual_config());
  EXPECT_NE(printed.find("\nkind = [\"lstm\", \"transformer\", \"linear_scan\"]\n"), std::string::npos);
  EXPECT_NE(printed.find("\nrope_theta = 500000.0\n"), std::string::npos);
  EXPECT_NE(printed.find("\nlr = 0.0003\n"), std::string::npos);
  EXPECT_NE(printed.find("\ndescription = \"line one\\u000aline two\"\n"), std::string::npos);
  // One kind for every layer prints as a plain string.
  EXPECT_NE(to_toml(Config{}).find("\nkind = \"lstm\"\n"), std::string::npos);
  EXPECT_NE(printed.find("# config hash: " + config_hash(unusual_config()) + "\n"), std::string::npos);
}

TEST(PrintConfig, AutoLocalBatchReadsBackAsAuto) {
  const Config automatic = resolve_defaults({"--training.local_batch_size=auto"}).config;
  const std::string printed = to_toml(automatic);
  EXPECT_NE(printed.find(" (in [1, 16777216] or \"auto\")\nlocal_batch_size = \"auto\"\n"), std::string::npos)
      << printed;
  EXPECT_TRUE(load_config_text(printed, "printed.toml").config == automatic);
  // The hash tells auto from any number.
  Config fixed = automatic;
  fixed.training.local_batch_size = 8;
  EXPECT_NE(config_hash(fixed), config_hash(automatic));
  EXPECT_EQ(config_hash(fixed), config_hash(Config{}));
}

TEST(ConfigHash, IsSixteenHexDigits) {
  const std::string hash = config_hash(Config{});
  EXPECT_EQ(hash.size(), 16u);
  EXPECT_EQ(hash.find_first_not_of("0123456789abcdef"), std::string::npos) << hash;
}

TEST(ConfigHash, DependsOnlyOnTheValues) {
  // The same values given by a file and by flags hash the same.
  const Config from_file =
      load_config_text("[training]\nsteps = 77\n[optimizer]\nlr = 1e-3\n", "x.toml").config;
  const Config from_flags = resolve_defaults({"--optimizer.lr=0.001", "--training.steps=77"}).config;
  EXPECT_EQ(config_hash(from_file), config_hash(from_flags));
}

TEST(ConfigHash, ChangesWithEveryKey) {
  // Change each key in turn to another valid value; every hash must differ.
  std::set<std::string> hashes = {config_hash(Config{})};
  for (const KeySpec& key : schema().keys()) {
    Config config;
    Value value = key.get(config);
    if (auto* b = std::get_if<bool>(&value)) *b = !*b;
    if (auto* i = std::get_if<std::int64_t>(&value)) *i += 1;
    if (auto* x = std::get_if<double>(&value)) *x = *x == 0 ? 0.5 : *x / 2;
    if (auto* s = std::get_if<std::string>(&value)) *s = key.name == "task" ? "parity" : *s + "x";
    if (auto* list = std::get_if<std::vector<std::string>>(&value)) *list = {"gru"};
    key.set(config, value);
    EXPECT_TRUE(hashes.insert(config_hash(config)).second) << key.dotted_name();
  }
}

}  // namespace
}  // namespace flashtrain::config

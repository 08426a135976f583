// The schema table itself, and the defaults.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "flashtrain/config/consistency.h"
#include "flashtrain/config/load.h"
#include "flashtrain/config/schema.h"

namespace flashtrain::config {
namespace {

TEST(Schema, HasTorchtitansSectionsInOrder) {
  std::vector<std::string> names;
  for (const SectionSpec& section : schema().sections()) names.emplace_back(section.name);
  EXPECT_EQ(names, (std::vector<std::string>{"job", "model", "tokenizer", "data", "optimizer",
                                             "lr_scheduler", "training", "validation", "checkpoint",
                                             "metrics", "parallelism", "debug"}));
}

TEST(Schema, EverySectionHasKeysAndAOneLineDoc) {
  for (const SectionSpec& section : schema().sections()) {
    EXPECT_FALSE(section.doc.empty()) << section.name;
    EXPECT_EQ(section.doc.find('\n'), std::string_view::npos) << section.name;
    EXPECT_FALSE(schema().keys_of(section.name).empty()) << section.name;
  }
}

TEST(Schema, EveryKeyIsUniqueDocumentedAndOfItsType) {
  std::set<std::string> seen;
  for (const KeySpec& key : schema().keys()) {
    EXPECT_TRUE(seen.insert(key.dotted_name()).second) << "duplicate " << key.dotted_name();
    EXPECT_NE(schema().find_section(key.section), nullptr) << key.dotted_name();
    EXPECT_FALSE(key.doc.empty()) << key.dotted_name();
    EXPECT_EQ(key.doc.find('\n'), std::string_view::npos) << key.dotted_name();
    EXPECT_EQ(key.get(Config{}).index(), static_cast<std::size_t>(key.type)) << key.dotted_name();
  }
}

TEST(Schema, EveryDefaultPassesItsOwnCheck) {
  for (const KeySpec& key : schema().keys()) {
    const auto problem = check_value(key, key.get(Config{}));
    EXPECT_FALSE(problem) << problem->message;
  }
}

TEST(Schema, AliasesNeverHideAKeyOfTheirSection) {
  for (const KeySpec& key : schema().keys())
    for (const std::string_view alias : key.aliases)
      EXPECT_EQ(schema().find_key(key.section, alias), nullptr)
          << "alias '" << alias << "' of " << key.dotted_name() << " is a key of its section";
}

TEST(Schema, SetThenGetGivesTheValueBack) {
  Config config;
  const KeySpec* steps = schema().find_key("training", "steps");
  ASSERT_NE(steps, nullptr);
  steps->set(config, std::int64_t{31});
  EXPECT_EQ(config.training.steps, 31);
  EXPECT_EQ(std::get<std::int64_t>(steps->get(config)), 31);
  EXPECT_EQ(schema().find_key("training", "lr"), nullptr);
  EXPECT_EQ(schema().find_section("trainer"), nullptr);
}

TEST(Constraints, DescribeAndCheck) {
  const Constraint unit = Constraint::float_range(0, false, 1, true);
  EXPECT_EQ(unit.describe(), "in [0, 1)");
  EXPECT_EQ(unit.problem(0.0), "");
  EXPECT_EQ(unit.problem(1.0), "must be in [0, 1); got 1");
  EXPECT_EQ(unit.problem(-0.5), "must be in [0, 1); got -0.5");
  EXPECT_EQ(Constraint::positive().describe(), "> 0");
  EXPECT_EQ(Constraint::positive().problem(0.0), "must be > 0; got 0");
  EXPECT_EQ(Constraint::at_least(1).describe(), ">= 1");
  EXPECT_EQ(Constraint::int_range(2, 26).problem(std::int64_t{27}), "must be in [2, 26]; got 27");
  const Constraint choice = Constraint::one_of({"a1", "b2"}, /*empty_allowed=*/true);
  EXPECT_EQ(choice.describe(), "one of: a1, b2; or \"\"");
  EXPECT_EQ(choice.problem(std::string()), "");
  EXPECT_EQ(choice.problem(std::string("c3")), "must be one of a1, b2 or \"\"; got 'c3'");
  EXPECT_EQ(Constraint::non_empty().problem(std::string()), "must not be empty");
  EXPECT_EQ(Constraint::none().describe(), "");
}

TEST(Defaults, AreConsistentAndAsDocumented) {
  const ResolvedConfig defaults = resolve_defaults();  // would throw if inconsistent
  const Config& c = defaults.config;
  EXPECT_TRUE(c == Config{});
  EXPECT_EQ(c.model.kind, std::vector<std::string>{"lstm"});
  EXPECT_EQ(c.model.dim, 768);
  EXPECT_EQ(c.model.resolved_head_dim(), 64);  // head_dim 0 -> dim / n_heads
  EXPECT_EQ(c.model.layer_kind(11), "lstm");
  EXPECT_EQ(c.model.backend, "auto");
  EXPECT_EQ(c.optimizer.name, "adamw");
  EXPECT_EQ(c.lr_scheduler.decay, "cosine");
  EXPECT_EQ(c.training.mixed_precision, "bf16");
  EXPECT_EQ(c.checkpoint.resume, "latest");
  EXPECT_EQ(c.data.task, "");
  EXPECT_EQ(planned_world_size(c), 1);
  EXPECT_EQ(accumulation_steps(c, 1), 1);
  for (const KeySpec& key : schema().keys())
    EXPECT_EQ(defaults.origin(key.dotted_name()), nullptr) << key.dotted_name();
}

TEST(Defaults, AnEmptyFileGivesTheDefaults) {
  EXPECT_TRUE(load_config_text("", "empty.toml").config == Config{});
  EXPECT_TRUE(load_config_text("# only a comment\n[training]\n", "c.toml").config == Config{});
}

TEST(Config, LayerKindsOfAPerLayerList) {
  const Config c = resolve_defaults({"--model.n_layers=2", "--model.kind=transformer,lstm"}).config;
  EXPECT_EQ(c.model.layer_kind(0), "transformer");
  EXPECT_EQ(c.model.layer_kind(1), "lstm");
  EXPECT_TRUE(is_multihead_rnn_kind("slstm"));
  EXPECT_FALSE(is_multihead_rnn_kind("linear_scan"));
  EXPECT_FALSE(is_multihead_rnn_kind("transformer"));
}

}  // namespace
}  // namespace flashtrain::config

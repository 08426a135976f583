// The config as JSON, for checkpoints and exports.
#include <gtest/gtest.h>

#include <string>

#include "flashtrain/config/json.h"
#include "flashtrain/config/load.h"
#include "flashtrain/config/schema.h"

namespace flashtrain::config {
namespace {

TEST(ConfigJson, HoldsEveryKeyWithItsValue) {
  const Config config = resolve_defaults({"--training.steps=5", "--model.kind=gru"}).config;
  const nlohmann::json json = to_json(config);
  for (const KeySpec& key : schema().keys())
    EXPECT_TRUE(json.at(std::string(key.section)).contains(std::string(key.name))) << key.dotted_name();
  EXPECT_EQ(json.at("training").at("steps"), 5);
  EXPECT_EQ(json.at("optimizer").at("lr"), config.optimizer.lr);
  EXPECT_EQ(json.at("model").at("kind"), nlohmann::json::array({"gru"}));
  EXPECT_EQ(json.at("debug").at("deterministic"), false);
}

TEST(ConfigJson, ReadsBackItsOwnOutput) {
  const Config config =
      resolve_defaults({"--model.n_layers=2", "--model.kind=slstm,transformer", "--job.name=j\"x",
                        "--optimizer.lr=0.000123456789"})
          .config;
  // Through text, as a checkpoint stores it.
  const nlohmann::json reread = nlohmann::json::parse(to_json(config).dump());
  EXPECT_TRUE(config_from_json(reread, "config.json") == config);
}

TEST(ConfigJson, AutoLocalBatchIsTheStringAuto) {
  const Config config = resolve_defaults({"--training.local_batch_size=auto"}).config;
  const nlohmann::json json = to_json(config);
  EXPECT_EQ(json.at("training").at("local_batch_size"), "auto");
  EXPECT_TRUE(config_from_json(json, "config.json") == config);
  EXPECT_THROW(config_from_json(nlohmann::json::parse(R"({"training": {"local_batch_size": "big"}})"), "c.json"),
               ConfigError);
}

TEST(ConfigJson, MissingKeysKeepTheirDefaults) {
  const Config config = config_from_json(nlohmann::json::parse(R"({"training": {"steps": 9}})"), "c.json");
  Config expected;
  expected.training.steps = 9;
  EXPECT_TRUE(config == expected);
}

TEST(ConfigJson, BadInputIsAConfigErrorNamingTheFile) {
  struct Case {
    const char* json;
    const char* what;
  };
  const Case cases[] = {
      {R"([1, 2])", "c.json: error: the config must be a JSON object of sections"},
      {R"({"optimiser": {}})", "c.json: error: unknown section [optimiser]; did you mean [optimizer]?"},
      {R"({"optimizer": 3})", "c.json: error: section [optimizer] must be a JSON object"},
      {R"({"optimizer": {"learning_rate": 1}})",
       "c.json: error: unknown key 'learning_rate' in [optimizer]; did you mean 'lr'?"},
      {R"({"training": {"steps": "9"}})",
       "c.json: error: 'steps' in [training] must be an integer; got \"9\""},
      {R"({"training": {"steps": 1.5}})",
       "c.json: error: 'steps' in [training] must be an integer; got 1.5"},
      {R"({"training": {"seed": 18446744073709551615}})",
       "c.json: error: 'seed' in [training] must be an integer; got 18446744073709551615"},
      {R"({"model": {"kind": ["lstm", 1]}})",
       "c.json: error: 'kind' in [model] must be a string or an array of strings; got [\"lstm\",1]"},
      {R"({"optimizer": {"lr": 0}})", "c.json: error: 'lr' in [optimizer] must be > 0; got 0"},
      {R"({"model": {"head_dim": 7}})",
       "c.json: error: model.n_heads x model.head_dim = 12 x 7 = 84 must equal model.dim (768) for "
       "lstm blocks, whose heads split the state"},
  };
  for (const Case& c : cases) {
    try {
      config_from_json(nlohmann::json::parse(c.json), "c.json");
      ADD_FAILURE() << "accepted " << c.json;
    } catch (const ConfigError& e) {
      EXPECT_EQ(std::string(e.what()), c.what);
    }
  }
}

}  // namespace
}  // namespace flashtrain::config

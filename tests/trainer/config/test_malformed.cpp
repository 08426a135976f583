// Malformed config files: each must fail with the exact position and message.
// The files are written to a temporary directory and loaded by path, as users
// load them.
#include <gtest/gtest.h>

#include <string>

#include "flashtrain/config/load.h"
#include "temp_files.h"

namespace flashtrain::config {
namespace {

struct Malformed {
  const char* name;  // the test's name
  const char* toml;
  int line;
  int column;
  const char* message;
};

void PrintTo(const Malformed& c, std::ostream* out) { *out << c.name; }

class MalformedConfig : public ::testing::TestWithParam<Malformed> {};

TEST_P(MalformedConfig, FailsAtThePositionWithTheMessage) {
  const Malformed& c = GetParam();
  const testing::TempDir dir;
  const std::string path = dir.write("bad.toml", c.toml);
  try {
    load_config(path);
    FAIL() << "loaded without an error:\n" << c.toml;
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(e.line(), c.line);
    EXPECT_EQ(e.column(), c.column);
    EXPECT_EQ(e.message(), c.message);
    EXPECT_EQ(std::string(e.what()), path + ":" + std::to_string(c.line) + ":" +
                                         std::to_string(c.column) + ": error: " + c.message);
  }
}

const Malformed kCases[] = {
    // Names the schema does not know.
    {"KeyTypoOfAnAlias", "[optimizer]\nlerning_rate = 3e-4\n", 2, 1,
     "unknown key 'lerning_rate' in [optimizer]; did you mean 'lr'?"},
    {"KeyTypo", "[training]\nstpes = 10\n", 2, 1,
     "unknown key 'stpes' in [training]; did you mean 'steps'?"},
    {"KeyInTheWrongCase", "[optimizer]\n  LR = 0.1\n", 2, 3,
     "unknown key 'LR' in [optimizer]; did you mean 'lr'?"},
    {"KeyOfAnotherSection", "[training]\nsteps = 10\nseq_len = 128\n", 3, 1,
     "unknown key 'seq_len' in [training]; 'seq_len' is a key of [data]"},
    {"KeyUnlikeAnyOther", "[debug]\nverbose_graphs = true\n", 2, 1,
     "unknown key 'verbose_graphs' in [debug]; the keys of [debug] are anomaly_detection, "
     "deterministic"},
    {"SubTableInASection", "[optimizer.adam]\nbeta = 1\n", 1, 12,
     "unknown key 'adam' in [optimizer]; the keys of [optimizer] are name, lr, beta1, beta2, eps, "
     "weight_decay"},
    {"SectionTypo", "[job]\nname = \"x\"\n\n[optimzer]\nlr = 1e-3\n", 4, 2,
     "unknown section [optimzer]; did you mean [optimizer]?"},
    {"SectionUnlikeAnyOther", "[wandb]\nproject = \"x\"\n", 1, 2,
     "unknown section [wandb]; the sections are [job], [model], [tokenizer], [data], [optimizer], "
     "[lr_scheduler], [training], [validation], [checkpoint], [metrics], [parallelism], [debug]"},
    {"KeyBeforeAnySection", "steps = 10\n[training]\n", 1, 1,
     "key 'steps' is outside any section; 'steps' is a key of [training], [validation]"},
    {"ArrayOfTables", "[[model]]\ndim = 256\n", 1, 3,
     "[[model]] is an array of tables; write [model] once"},
    {"SectionGivenAValue", "model = \"lstm\"\n", 1, 9,
     "'model' is a section and must be a table ([model]); got a string ('lstm')"},

    // Wrong types.
    {"StringForInteger", "[training]\nsteps = \"100\"\n", 2, 9,
     "'steps' in [training] must be an integer; got a string ('100')"},
    {"FloatForInteger", "[training]\nsteps = 1e3\n", 2, 9,
     "'steps' in [training] must be an integer; got a float (1000.0)"},
    {"StringForBoolean", "[debug]\ndeterministic = \"yes\"\n", 2, 17,
     "'deterministic' in [debug] must be a boolean; got a string ('yes')"},
    {"IntegerForString", "[job]\nname = 42\n", 2, 8,
     "'name' in [job] must be a string; got an integer (42)"},
    {"DateForString", "[job]\nname = 2024-01-01\n", 2, 8,
     "'name' in [job] must be a string; got a date"},
    {"TableForFloat", "[optimizer.lr]\nvalue = 1\n", 1, 1,
     "'lr' in [optimizer] must be a float; got a table"},
    {"NumberInAKindList", "[model]\nn_layers = 2\nkind = [\"lstm\", 3]\n", 3, 17,
     "element 2 of 'kind' in [model] must be a string; got an integer (3)"},

    // Values out of range or not among the choices.
    {"IntegerBelowItsRange", "[training]\nlocal_batch_size = 0\n", 2, 20,
     "'local_batch_size' in [training] must be in [1, 16777216] or \"auto\"; got 0"},
    {"IntegerKeyTakesOnlyItsKeyword", "[training]\nsteps = 5\nlocal_batch_size = \"big\"\n", 3, 20,
     "'local_batch_size' in [training] must be an integer or \"auto\"; got a string ('big')"},
    {"KeywordOfAnotherKey", "[training]\nsteps = \"auto\"\n", 2, 9,
     "'steps' in [training] must be an integer; got a string ('auto')"},
    {"NegativeLearningRate", "[optimizer]\nlr = -1e-3\n", 2, 6,
     "'lr' in [optimizer] must be > 0; got -0.001"},
    {"BetaAtItsOpenBound", "[optimizer]\nbeta2 = 1.0\n", 2, 9,
     "'beta2' in [optimizer] must be in [0, 1); got 1"},
    {"NotANumber", "[optimizer]\neps = nan\n", 2, 7,
     "'eps' in [optimizer] must be a finite number; got nan"},
    {"Infinity", "[model]\ndropout = inf\n", 2, 11,
     "'dropout' in [model] must be a finite number; got inf"},
    {"EmptyName", "[job]\nname = \"\"\n", 2, 8, "'name' in [job] must not be empty"},
    {"ChoiceTypo", "[model]\nbackend = \"fusd\"\n", 2, 11,
     "'backend' in [model] must be one of vanilla, alternating, fused, auto; got 'fusd'; did you "
     "mean 'fused'?"},
    {"ChoiceUnlikeAny", "[lr_scheduler]\ndecay = \"exponential\"\n", 2, 9,
     "'decay' in [lr_scheduler] must be one of cosine, wsd, constant; got 'exponential'"},
    {"KindTypoInAList", "[model]\nn_layers = 2\nkind = [\"lstm\", \"lsmt\"]\n", 3, 17,
     "element 2 of 'kind' in [model] must be one of lstm, gru, elman, slstm, linear_scan, "
     "transformer; got 'lsmt'; did you mean 'lstm'?"},
    {"EmptyKindList", "[model]\nkind = []\n", 2, 8, "'kind' in [model] must not be an empty array"},
    {"DottedKeyAtTheTop", "optimizer.weight_decay = -0.1\n", 1, 26,
     "'weight_decay' in [optimizer] must be >= 0; got -0.1"},
    {"InlineTable", "training = { steps = 0 }\n", 1, 22,
     "'steps' in [training] must be >= 1; got 0"},

    // Not TOML at all (TOML++'s message and position).
    {"MissingValue", "[training]\nsteps =\n", 2, 8,
     "invalid TOML: expected value, saw '\\n' (while parsing key-value pair)"},
    {"DuplicateKey", "[training]\nsteps = 1\nsteps = 2\n", 3, 9,
     "invalid TOML: cannot redefine existing integer 'steps' (while parsing key-value pair)"},
    {"DuplicateSection", "[model]\ndim = 64\n[model]\n", 3, 1,
     "invalid TOML: cannot redefine existing table 'model' (while parsing table header)"},
    {"NewlineInAString", "[job]\nname = \"run\n", 2, 12,
     "invalid TOML: unescaped control characters other than TAB (U+0009) are explicitly "
     "prohibited (while parsing string)"},
    {"UnterminatedStringAtTheEnd", "[job]\nname = \"run", 2, 12,
     "invalid TOML: encountered end-of-file (while parsing string)"},
    {"IntegerTooLarge", "[training]\nseed = 99999999999999999999\n", 2, 28,
     "invalid TOML: '99999999999999999999' is not representable in 64 bits (while parsing decimal "
     "integer)"},

    // Relations between keys: located at the key set last.
    {"AutoLocalBatchWithAGlobalBatchNotPerRank",
     "[training]\nlocal_batch_size = \"auto\"\nglobal_batch_size = 9\n[parallelism]\nnproc = 2\n", 5, 9,
     "training.global_batch_size (9) is not a multiple of parallelism.nproc (2), so "
     "training.local_batch_size = auto has no whole batch per rank to divide"},
    {"GlobalBatchNotAMultiple", "[training]\nlocal_batch_size = 8\nglobal_batch_size = 20\n", 3, 21,
     "training.global_batch_size (20) is not a multiple of training.local_batch_size x "
     "parallelism.nproc = 8 x 1 = 8"},
    {"HeadsDoNotMakeTheWidth", "[model]\ndim = 768\nn_heads = 12\nhead_dim = 32\n", 4, 12,
     "model.n_heads x model.head_dim = 12 x 32 = 384 must equal model.dim (768) for lstm blocks, "
     "whose heads split the state"},
    {"KindListShorterThanLayers", "[model]\nkind = [\"lstm\", \"transformer\"]\nn_layers = 3\n", 3,
     12,
     "model.kind lists 2 block kinds but model.n_layers is 3; give one kind for all layers or one "
     "per layer"},
    {"WsdPhasesLongerThanTraining",
     "[training]\nsteps = 100\n[lr_scheduler]\ndecay = \"wsd\"\nwarmup_steps = 90\n", 5, 16,
     "lr_scheduler.warmup_steps (90) plus the wsd decay (decay_ratio x steps = 20) exceed "
     "training.steps (100)"},
    {"PlainTransformer", "[model]\nkind = \"transformer\"\nstructure = \"plain\"\n", 3, 13,
     "model.structure = plain stacks lstm, gru and elman layers, but model.kind gives layer 0 the "
     "kind transformer; use model.structure = residual for transformer blocks"},
    {"PlainHeadsDoNotMakeTheWidth",
     "[model]\nstructure = \"plain\"\ndim = 64\nn_heads = 2\nhead_dim = 16\n", 5, 12,
     "model.n_heads x model.head_dim = 2 x 16 = 32 must equal model.dim (64) for lstm blocks, "
     "whose heads split the state"},
    {"NoVocabularySource", "[tokenizer]\npath = \"\"\n", 2, 8,
     "model.vocab_size is 0 (take it from the tokenizer) but tokenizer.path is empty; set one of "
     "them"},
};

INSTANTIATE_TEST_SUITE_P(Cases, MalformedConfig, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Malformed>& info) {
                           return std::string(info.param.name);
                         });

TEST(MalformedConfig, MissingFileIsAnErrorNamingIt) {
  const testing::TempDir dir;
  const std::string path = dir.path() + "/absent.toml";
  try {
    load_config(path);
    FAIL() << "loaded a file that does not exist";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              path + ": error: cannot open the config file: No such file or directory");
    EXPECT_EQ(e.line(), 0);
  }
}

TEST(MalformedConfig, DirectoryIsNotAConfigFile) {
  const testing::TempDir dir;
  try {
    load_config(dir.path());
    FAIL() << "loaded a directory";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), dir.path() + ": error: is a directory, not a config file");
  }
}

TEST(MalformedConfig, TheFirstProblemInTheFileIsReported) {
  // TOML++ keeps keys sorted by name; errors must still follow the file.
  const testing::TempDir dir;
  const std::string path = dir.write("two.toml", "[training]\nzz_unknown = 1\nsteps = 0\n");
  try {
    load_config(path);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.line(), 2);
  }
}

}  // namespace
}  // namespace flashtrain::config

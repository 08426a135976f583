// The Python reference of the LMs (experiments/lm/reference_lm.py, numpy,
// written from docs/CELLS.md and models/README.md without our code)
// reproduces the logits of trained, exported models: a tiny run trains a few
// steps, is exported, our forward runs on a fixed token sequence, and the
// reference computes the same logits from the export alone.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <fstream>
#include <iomanip>
#include <sstream>

#include "flashtrain/trainer/checkpoint/exporter.h"
#include "flashtrain/trainer/checkpoint/staged_directory.h"
#include "flashtrain/trainer/checkpoint/tensor_file.h"
#include "flashtrain/trainer/run/trainer.h"
#include "python_script.h"
#include "tiny_run.h"

namespace flashtrain::trainer {
namespace {

namespace fs = std::filesystem;
using testing::TinyRun;

// Tolerances on the largest absolute logit difference (logits are O(1)):
// our float32 forward against the reference's float64, and our forward in
// float64 (the exported float32 parameters, widened) against it.
constexpr double kFloat32Tolerance = 1e-5;  // seen: about 1e-6
constexpr double kFloat64Tolerance = 1e-12;  // seen: about 2e-15

struct Case {
  const char* name;
  std::vector<std::string> overrides;  // over TinyRun's lstm, dim 32, 2 heads x 16
};

const Case kCases[] = {
    {"lstm_one_head", {"--model.n_heads=1", "--model.head_dim=32"}},
    {"lstm_four_heads_two_layers_untied",
     {"--model.n_heads=4", "--model.head_dim=8", "--model.n_layers=2", "--model.tie_embeddings=false"}},
    {"lstm_without_feed_forward", {"--model.ffn_factor=0"}},
    {"slstm", {"--model.kind=slstm"}},
    {"slstm_without_conv_over_lstm", {"--model.kind=lstm,slstm", "--model.n_layers=2", "--model.conv_kernel=0"}},
    {"gru_and_elman", {"--model.kind=gru,elman", "--model.n_layers=2"}},
    {"transformer", {"--model.kind=transformer"}},
    {"lstm_linear_scan_transformer", {"--model.kind=lstm,linear_scan,transformer", "--model.n_layers=3"}},
    {"plain_lstm_two_layers_untied",
     {"--model.structure=plain", "--model.n_layers=2", "--model.tie_embeddings=false"}},
    // Trained longer: after 3 steps the small-init layers' logits barely vary.
    {"plain_gru_and_elman",
     {"--model.structure=plain", "--model.kind=gru,elman", "--model.n_layers=2", "--training.steps=30"}},
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::string scientific(double x) {
  std::ostringstream out;
  out << std::scientific << std::setprecision(2) << x;
  return out.str();
}

// A fixed sequence of every token id in a scrambled order, two rows.
torch::Tensor fixed_tokens() {
  const torch::Tensor t = torch::arange(40, torch::kLong).view({2, 20});
  return (t * 7 + 3) % testing::kTinyVocab;
}

class ReferenceLogits : public ::testing::TestWithParam<Case> {};

TEST_P(ReferenceLogits, PythonReferenceReproducesOurLogits) {
  TinyRun run;
  std::vector<std::string> flags = {"--training.steps=3", "--validation.every=0"};
  for (const std::string& flag : GetParam().overrides) flags.push_back(flag);
  const config::ResolvedConfig resolved = run.config(flags);
  std::ostringstream log;
  Trainer trainer(resolved, log);
  trainer.run();  // trained a little: sLSTM's R starts at zero
  models::LanguageModelImpl& model = trainer.model();
  TrainingProgress progress;
  progress.step = 3;
  const fs::path export_dir = run.dir() / "export";
  export_model(resolved.config, model, progress, export_dir);

  const torch::Tensor tokens = fixed_tokens();
  torch::NoGradGuard no_grad;
  const torch::Tensor ours32 = model.forward(tokens).to(torch::kDouble);
  model.to(torch::kDouble);
  const torch::Tensor ours64 = model.forward(tokens);
  {
    StagedDirectory input(run.dir() / "input", "test");
    write_tensor_file(input, "tokens.safetensors", {{"tokens", tokens}});
    input.commit();
  }
  const fs::path output = run.dir() / "reference_logits.safetensors";
  const testing::PythonRun python = testing::run_python_script(
      "experiments/lm/reference_lm.py",
      {export_dir.string(), "--tokens-file", (run.dir() / "input" / "tokens.safetensors").string(), "--output",
       output.string()},
      run.dir() / "python.log");
  ASSERT_NE(python.status, -1) << python.output;
  if (python.status == testing::kPythonMissingPackages)
    GTEST_SKIP() << testing::python_interpreter() << " lacks numpy or safetensors: " << python.output;
  ASSERT_EQ(python.status, 0) << python.output;

  const torch::Tensor reference = read_tensor_file(output).at("logits");
  ASSERT_EQ(reference.scalar_type(), torch::kDouble);
  ASSERT_EQ(reference.sizes(), ours64.sizes());
  // Logits that vary: a comparison of near-constant outputs would prove little.
  EXPECT_GT(reference.std().item<double>(), 0.05);
  const double diff32 = (ours32 - reference).abs().max().item<double>();
  const double diff64 = (ours64 - reference).abs().max().item<double>();
  EXPECT_LT(diff32, kFloat32Tolerance) << "float32 forward";
  EXPECT_LT(diff64, kFloat64Tolerance) << "float64 forward";

  // The command-line form: the top next token after row 0 is our argmax.
  std::string ids;
  for (std::int64_t i = 0; i < tokens.size(1); ++i) ids += (i ? "," : "") + std::to_string(tokens[0][i].item<std::int64_t>());
  const testing::PythonRun top = testing::run_python_script(
      "experiments/lm/reference_lm.py", {export_dir.string(), "--tokens", ids}, run.dir() / "top.log");
  EXPECT_EQ(top.status, 0) << top.output;
  const std::int64_t argmax = ours64[0][-1].argmax().item<std::int64_t>();
  EXPECT_EQ(top.output.rfind("next token (id: logit): " + std::to_string(argmax) + ": ", 0), 0u) << top.output;
  RecordProperty("max_abs_diff_float32", scientific(diff32));
  RecordProperty("max_abs_diff_float64", scientific(diff64));
}

INSTANTIATE_TEST_SUITE_P(Models, ReferenceLogits, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

// The reference names what it cannot run: a directory that is no export, a
// block kind it does not know, parameters whose shapes contradict config.json.
TEST(ReferenceLm, RefusesWhatItCannotRunByName) {
  TinyRun run;
  const config::ResolvedConfig resolved = run.config({"--training.steps=1", "--validation.every=0"});
  std::ostringstream log;
  Trainer trainer(resolved, log);
  const fs::path export_dir = run.dir() / "export";
  export_model(resolved.config, trainer.model(), TrainingProgress{}, export_dir);
  std::ifstream in(export_dir / "config.json");
  const nlohmann::json config = nlohmann::json::parse(in);
  const auto run_with = [&](const nlohmann::json& edited, const std::string& name) {
    testing::write_file(export_dir / "config.json", edited.dump());
    return testing::run_python_script("experiments/lm/reference_lm.py", {export_dir.string(), "--tokens", "1,2"},
                                      run.dir() / (name + ".log"));
  };
  const testing::PythonRun fine = run_with(config, "fine");
  if (fine.status == testing::kPythonMissingPackages) GTEST_SKIP() << fine.output;
  EXPECT_EQ(fine.status, 0) << fine.output;

  nlohmann::json unknown = config;
  unknown["blocks"] = {"mamba"};
  const testing::PythonRun refused = run_with(unknown, "unknown");
  EXPECT_EQ(refused.status, 2) << refused.output;
  EXPECT_NE(refused.output.find("block 0 is a mamba block"), std::string::npos) << refused.output;

  nlohmann::json heads = config;
  heads["n_heads"] = 4;
  heads["head_dim"] = 8;
  const testing::PythonRun mismatch = run_with(heads, "heads");
  EXPECT_EQ(mismatch.status, 2) << mismatch.output;
  EXPECT_NE(mismatch.output.find("blocks.0.mixer.r has shape [4, 2, 16, 16], but config.json implies [4, 4, 8, 8]"),
            std::string::npos)
      << mismatch.output;

  const testing::PythonRun missing = testing::run_python_script(
      "experiments/lm/reference_lm.py", {run.dir().path().string(), "--tokens", "1"}, run.dir() / "missing.log");
  EXPECT_EQ(missing.status, 2) << missing.output;
  EXPECT_NE(missing.output.find("has no config.json"), std::string::npos) << missing.output;
}

}  // namespace
}  // namespace flashtrain::trainer

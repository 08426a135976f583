// Export (safetensors + config.json + manifest) read back in C++ and, where
// Python's safetensors package is installed, by it; tensor files; sampling.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "flashtrain/trainer/checkpoint/exporter.h"
#include "flashtrain/trainer/checkpoint/safetensors.h"
#include "flashtrain/trainer/cli/sampler.h"
#include "flashtrain/trainer/checkpoint/staged_directory.h"
#include "flashtrain/trainer/checkpoint/tensor_file.h"
#include "flashtrain/trainer/run/trainer.h"
#include "python_script.h"
#include "tiny_run.h"

namespace flashtrain::trainer {
namespace {

namespace fs = std::filesystem;
using testing::TinyRun;

struct Exported {
  fs::path directory;
  std::map<std::string, torch::Tensor> parameters;  // what the model held
};

Exported train_and_export(const TinyRun& run) {
  const config::ResolvedConfig resolved = run.config({"--training.steps=3", "--validation.every=0"});
  std::ostringstream log;
  Trainer trainer(resolved, log);
  trainer.run();
  Exported out;
  out.directory = run.dir() / "export";
  TrainingProgress progress;
  progress.step = 3;
  progress.tokens_seen = 3 * 8 * 16;
  export_model(resolved.config, trainer.model(), progress, out.directory);
  for (const auto& item : trainer.model().named_parameters()) out.parameters[item.key()] = item.value().detach().clone();
  return out;
}

TEST(Export, SafetensorsReadBackEqualsTheModel) {
  TinyRun run;
  const Exported exported = train_and_export(run);
  const nlohmann::json manifest = verify_manifest(exported.directory);
  EXPECT_EQ(manifest["kind"], "export");

  const SafetensorsFile file = SafetensorsFile::read((exported.directory / "model.safetensors").string());
  EXPECT_EQ(file.metadata().at("format"), "pt");
  EXPECT_EQ(file.data_start() % 8, 0u);
  ASSERT_EQ(file.tensors().size(), exported.parameters.size());
  for (const auto& [name, parameter] : exported.parameters) {
    const SafetensorsFile::Entry& entry = file.at(name);  // dotted names, as the model's
    EXPECT_EQ(entry.dtype, "F32") << name;
    EXPECT_EQ(entry.shape, parameter.sizes().vec()) << name;
    ASSERT_EQ(entry.bytes, parameter.nbytes()) << name;
    EXPECT_EQ(std::memcmp(entry.data, parameter.data_ptr(), entry.bytes), 0) << name;
  }
  const auto tensors = read_tensor_file(exported.directory / "model.safetensors");
  for (const auto& [name, parameter] : exported.parameters) EXPECT_TRUE(torch::equal(tensors.at(name), parameter));

  std::ifstream in(exported.directory / "config.json");
  const nlohmann::json config = nlohmann::json::parse(in);
  EXPECT_EQ(config["vocab_size"], 32);
  EXPECT_EQ(config["d_model"], 32);
  EXPECT_EQ(config["blocks"], nlohmann::json({"lstm"}));
  EXPECT_EQ(config["structure"], "residual");
  EXPECT_EQ(config["step"], 3);
  EXPECT_EQ(config["tokenizer"], nullptr) << "this run has no tokenizer";
  EXPECT_EQ(config["training_config"]["model"]["dim"], 32);
  EXPECT_FALSE(fs::exists(exported.directory / "tokenizer.model"));
}

TEST(Export, NeverReplacesAnExistingDirectory) {
  TinyRun run;
  const Exported exported = train_and_export(run);
  const std::string before = testing::read_file(exported.directory / "model.safetensors");
  models::LanguageModelOptions o;
  o.vocab_size = 32;
  o.model.dim = 32;
  models::set_layer_kinds(o.model, {models::BlockKind::kLstm});
  o.model.n_heads = 2;
  models::LanguageModel other(o);
  EXPECT_THROW(export_model(run.config().config, *other, TrainingProgress{}, exported.directory), std::runtime_error);
  EXPECT_EQ(testing::read_file(exported.directory / "model.safetensors"), before);
}

// Python's safetensors package reads the export (skipped where it is not installed).
TEST(Export, PythonSafetensorsLoadsIt) {
  TinyRun run;
  const Exported exported = train_and_export(run);
  nlohmann::json expected;
  for (const auto& [name, parameter] : exported.parameters) {
    const torch::Tensor flat = parameter.reshape(-1).to(torch::kDouble);
    std::vector<double> first;
    for (std::int64_t i = 0; i < std::min<std::int64_t>(4, flat.numel()); ++i)
      first.push_back(double(parameter.reshape(-1)[i].item<float>()));
    expected[name] = {{"shape", parameter.sizes().vec()}, {"sum", flat.sum().item<double>()}, {"first", first}};
  }
  const fs::path expected_path = run.dir() / "expected.json";
  std::ofstream(expected_path) << expected.dump();
  const testing::PythonRun python = testing::run_python_script(
      "tests/trainer/check_export.py", {exported.directory.string(), expected_path.string()}, run.dir() / "python.log");
  ASSERT_NE(python.status, -1) << python.output;
  if (python.status == testing::kPythonMissingPackages)
    GTEST_SKIP() << testing::python_interpreter() << " has no safetensors package (scripts/setup.sh would pip install "
                 << "it; FLASHTRAIN_SAFETENSORS_PYTHON picks another interpreter): " << python.output;
  EXPECT_EQ(python.status, 0) << python.output;
}

TEST(TensorFile, RoundTripsDtypesAndRejectsMismatchedModels) {
  TinyRun run;
  const fs::path target = run.dir() / "tensors";
  {
    StagedDirectory out(target, "test");
    write_tensor_file(out, "t.safetensors",
                      {{"half", torch::arange(6, torch::kFloat).to(torch::kBFloat16).view({2, 3})},
                       {"count", torch::tensor(int64_t{41})},
                       {"bits", torch::tensor({1, 0, 1}, torch::kUInt8)}});
    out.commit();
  }
  const auto read = read_tensor_file(target / "t.safetensors");
  EXPECT_EQ(read.at("half").scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::equal(read.at("half"), torch::arange(6, torch::kFloat).to(torch::kBFloat16).view({2, 3})));
  EXPECT_EQ(read.at("count").item<int64_t>(), 41);
  EXPECT_EQ(read.at("count").dim(), 0);
  EXPECT_TRUE(torch::equal(read.at("bits"), torch::tensor({1, 0, 1}, torch::kUInt8)));

  torch::nn::Linear layer(2, 3);
  const auto expect_error = [&](const std::map<std::string, torch::Tensor>& tensors, const std::string& words) {
    try {
      load_parameters(*layer, tensors, "source.safetensors");
      ADD_FAILURE() << "loaded; expected: " << words;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  expect_error({{"weight", torch::zeros({3, 2})}}, "missing bias");
  expect_error({{"weight", torch::zeros({3, 2})}, {"bias", torch::zeros({3})}, {"extra", torch::zeros({1})}},
               "unexpected extra");
  expect_error({{"weight", torch::zeros({2, 3})}, {"bias", torch::zeros({3})}}, "weight is");
  // Weights a diverged run saved: an error naming the tensor, not "loss nan".
  expect_error({{"weight", torch::ones({3, 2})}, {"bias", torch::tensor({0.0f, NAN, INFINITY})}},
               "source.safetensors: bias holds 2 non-finite values");
  load_parameters(*layer, {{"weight", torch::ones({3, 2})}, {"bias", torch::zeros({3})}}, "ok");
  EXPECT_TRUE(torch::equal(layer->weight, torch::ones({3, 2})));
}

// A small model of these blocks (recurrent and attention: two heads each).
models::LanguageModelOptions small_model(std::vector<models::BlockKind> blocks) {
  models::LanguageModelOptions o;
  o.vocab_size = 20;
  o.model.dim = 16;
  models::set_layer_kinds(o.model, blocks);
  o.model.n_heads = 2;
  return o;
}

TEST(Sampler, GreedyFollowsTheFullSequenceModelAndIsDeterministic) {
  const models::LanguageModelOptions o = small_model({models::BlockKind::kLstm, models::BlockKind::kTransformer});
  torch::manual_seed(3);
  models::LanguageModel model(o);
  const std::vector<std::int32_t> prompt = {1, 5, 7, 2};
  SampleOptions greedy;
  greedy.max_new_tokens = 6;
  const std::vector<std::int32_t> a = generate(*model, prompt, greedy);
  ASSERT_EQ(a.size(), 6u);
  EXPECT_EQ(generate(*model, prompt, greedy), a);
  // Each greedy token is the argmax of the full-sequence forward over what came before.
  std::vector<std::int64_t> sequence(prompt.begin(), prompt.end());
  torch::NoGradGuard no_grad;
  for (std::int32_t token : a) {
    const torch::Tensor logits = model->forward(torch::tensor(sequence).view({1, -1}));
    EXPECT_EQ(logits[0][-1].argmax().item<std::int64_t>(), token);
    sequence.push_back(token);
  }
  SampleOptions hot;
  hot.max_new_tokens = 20;
  hot.temperature = 5.0;
  hot.seed = 11;
  const auto b = generate(*model, prompt, hot);
  EXPECT_EQ(generate(*model, prompt, hot), b) << "same seed, same draws";
  hot.seed = 12;
  EXPECT_NE(generate(*model, prompt, hot), b) << "another seed, other draws (20 tokens at temperature 5)";
  SampleOptions stop = greedy;
  stop.stop_token = a[1];
  EXPECT_EQ(generate(*model, prompt, stop).size(), a[0] == a[1] ? 1u : 2u);
  GenerationTimes times;
  generate(*model, prompt, greedy, &times);
  EXPECT_EQ(times.decode_mode, "eager (not on a GPU)");
  SampleOptions eager = greedy;
  eager.cuda_graph = false;
  generate(*model, prompt, eager, &times);
  EXPECT_EQ(times.decode_mode, "eager (cuda_graph off)");
  EXPECT_EQ(times.prefill_chunks, 0) << "auto: block after block on the CPU";
  SampleOptions waved = greedy;
  waved.prefill_chunks = 3;
  EXPECT_EQ(generate(*model, prompt, waved, &times), a) << "the prompt as a wavefront over 3 chunks";
  EXPECT_EQ(times.prefill_chunks, 3);
}

TEST(Sampler, AutoPrefillChunksAreTwoPerBlockOnAGpuForLongPrompts) {
  models::LanguageModelOptions o =
      small_model({models::BlockKind::kLstm, models::BlockKind::kLstm, models::BlockKind::kTransformer});
  models::LanguageModel model(o);
  const std::int64_t long_prompt = 6 * kMinPrefillChunkTokens;
  EXPECT_EQ(auto_prefill_chunks(*model, long_prompt, true), 6);
  EXPECT_EQ(auto_prefill_chunks(*model, long_prompt - 1, true), 0) << "a chunk would be under the minimum";
  EXPECT_EQ(auto_prefill_chunks(*model, long_prompt, false), 0) << "the CPU runs one block at a time anyway";
  o.model.wavefront_chunks = 4;
  models::LanguageModel configured(o);
  EXPECT_EQ(auto_prefill_chunks(*configured, 10, false), 4) << "the model's own wavefront_chunks";
}

// On a GPU the decode step of a model whose state keeps its shape is replayed
// from a CUDA graph, and gives the eager step's tokens; attention decodes eagerly.
TEST(Sampler, CudaGraphDecodeEqualsTheEagerOneOnAGpu) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no GPU";
  models::LanguageModelOptions o;
  o.vocab_size = 50;
  o.model.dim = 64;
  models::set_layer_kinds(o.model, {models::BlockKind::kLstm, models::BlockKind::kSlstm, models::BlockKind::kLinearScan});
  o.model.n_heads = 1;
  torch::manual_seed(5);
  models::LanguageModel model(o);
  model->to(torch::kCUDA);
  const std::vector<std::int32_t> prompt = {1, 5, 7, 2, 9, 11};
  SampleOptions graphed;
  graphed.max_new_tokens = 24;
  SampleOptions eager = graphed;
  eager.cuda_graph = false;
  GenerationTimes graphed_times, eager_times;
  const std::vector<std::int32_t> a = generate(*model, prompt, graphed, &graphed_times);
  EXPECT_EQ(graphed_times.decode_mode, "cuda graph");
  EXPECT_EQ(generate(*model, prompt, eager, &eager_times), a);
  EXPECT_EQ(eager_times.decode_mode, "eager (cuda_graph off)");
  SampleOptions hot = graphed;
  hot.temperature = 3.0;
  hot.seed = 4;
  SampleOptions hot_eager = hot;
  hot_eager.cuda_graph = false;
  EXPECT_EQ(generate(*model, prompt, hot), generate(*model, prompt, hot_eager));

  models::set_layer_kinds(o.model, {models::BlockKind::kLstm, models::BlockKind::kTransformer});
  o.model.n_heads = 2;
  models::LanguageModel with_attention(o);
  with_attention->to(torch::kCUDA);
  GenerationTimes times;
  generate(*with_attention, prompt, graphed, &times);
  EXPECT_NE(times.decode_mode.find("KV cache"), std::string::npos) << times.decode_mode;
}

}  // namespace
}  // namespace flashtrain::trainer

// Task runs: batches padded to their split's longest sequence, the answers
// counted by sequence length through the sums over ranks, and a plain LSTM
// on parity trained and validated end to end.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <fstream>
#include <sstream>

#include "flashtrain/trainer/batch/batch_source.h"
#include "flashtrain/trainer/run/evaluator.h"
#include "flashtrain/trainer/batch/task_setup.h"
#include "flashtrain/trainer/run/trainer.h"
#include "tiny_run.h"

namespace flashtrain::trainer {
namespace {

using testing::TinyRun;

// Parity on TinyRun's model: training lengths 3..8, validation 10..16, and a
// data.seq_len (64) that is neither.
config::ResolvedConfig parity(const TinyRun& run, std::vector<std::string> extra = {}) {
  std::vector<std::string> flags = {"--data.task=parity",         "--data.train_shards=",
                                    "--data.val_shards=",         "--model.vocab_size=0",
                                    "--data.seq_len=64",          "--data.task_train_min_len=3",
                                    "--data.task_train_max_len=8", "--data.task_val_min_len=10",
                                    "--data.task_val_max_len=16"};
  flags.insert(flags.end(), extra.begin(), extra.end());
  return run.config(flags);
}

TEST(TaskBatches, EachSplitIsPaddedToItsLongestSequence) {
  TinyRun run;
  const config::Config c = parity(run).config;
  EXPECT_EQ(task_context(c.data, Split::kTrain), 8);
  EXPECT_EQ(task_context(c.data, Split::kValidation), 16);
  EXPECT_EQ(train_context(c), 8);

  const Batch train = make_train_batches(c, 3, torch::kCPU)->next();
  EXPECT_EQ(train.inputs.sizes(), (std::vector<std::int64_t>{8, 8}));
  EXPECT_EQ(train.targets.sizes(), (std::vector<std::int64_t>{8, 8}));
  const Batch validation = make_validation_batches(c, 3, torch::kCPU)->next();
  EXPECT_EQ(validation.inputs.sizes(), (std::vector<std::int64_t>{8, 16}));
  ASSERT_EQ(validation.lengths.size(), 8u);
  for (std::size_t row = 0; row < validation.lengths.size(); ++row) {
    const std::int32_t length = validation.lengths[row];
    EXPECT_GE(length, 10);
    EXPECT_LE(length, 16);
    // The answer is the only target, at the sequence's last position.
    EXPECT_NE(validation.targets[std::int64_t(row)][length - 1].item<std::int64_t>(), data::kIgnoreTarget);
  }
}

TEST(TaskBatches, ShardsKeepSeqLenAsTheirContext) {
  TinyRun run;
  const config::Config c = run.config().config;
  EXPECT_EQ(train_context(c), 16);
  const Batch batch = make_train_batches(c, testing::kTinyVocab, torch::kCPU)->next();
  EXPECT_EQ(batch.inputs.size(1), 16);
  EXPECT_TRUE(batch.lengths.empty());
}

// A task stream's cursor continues the same task and seed exactly, and names
// the config key when either differs.
TEST(TaskBatches, CursorContinuesOnlyItsOwnTaskAndSeed) {
  TinyRun run;
  const config::Config c = parity(run).config;
  auto batches = make_train_batches(c, 3, torch::kCPU);
  batches->next();
  const nlohmann::json cursor = batches->cursor();
  const Batch expected = batches->next();
  auto resumed = make_train_batches(c, 3, torch::kCPU);
  resumed->restore(cursor);
  EXPECT_TRUE(torch::equal(resumed->next().inputs, expected.inputs));

  const auto mismatch_key = [&](const config::Config& other) -> std::string {
    try {
      make_train_batches(other, 3, torch::kCPU)->restore(cursor);
    } catch (const DataStreamMismatch& m) {
      return m.key + " " + m.saved + " -> " + m.now;
    }
    return "restored";
  };
  config::Config reseeded = c;
  reseeded.training.seed = c.training.seed + 1;
  EXPECT_EQ(mismatch_key(reseeded), "training.seed " + std::to_string(c.training.seed) + " -> " +
                                        std::to_string(reseeded.training.seed));
  config::Config other_task = c;
  other_task.data.task = "even_pairs";
  EXPECT_EQ(mismatch_key(other_task), "data.task parity -> even_pairs");
}

// The papers' rule: the prediction is the best of the answer tokens, even
// where a token that is no answer has the highest logit.
TEST(TaskEvaluation, PredictionsAreTheBestAnswerToken) {
  // Vocabulary of 5; the answers are tokens 1 and 3.
  const torch::Tensor logits = torch::tensor({{9.0, 1.0, 7.0, 2.0, 0.0},    // best 0, best answer 3
                                              {0.0, 5.0, 8.0, 4.0, 9.0},    // best 4, best answer 1
                                              {0.0, -1.0, 0.0, -0.5, 0.0}}  // best answer 3
                                             ).reshape({1, 3, 5});
  const torch::Tensor answers = torch::tensor({1, 3}, torch::kLong);
  const torch::Tensor predictions = answer_predictions(logits, answers);
  EXPECT_EQ(predictions.sizes(), (std::vector<std::int64_t>{1, 3}));
  EXPECT_TRUE(torch::equal(predictions, torch::tensor({{3, 1, 3}}, torch::kLong)));
}

// A per-position task judged on longer sequences scores only the positions
// beyond the training lengths; its training band scores every position.
TEST(TaskBands, PerPositionTestBandsScoreOnlyPositionsBeyondTraining) {
  TinyRun run;
  const config::Config c =
      run.config({"--data.task=z60", "--data.train_shards=", "--data.val_shards=", "--model.vocab_size=0",
                  "--data.task_train_min_len=3", "--data.task_train_max_len=8", "--data.task_val_min_len=10",
                  "--data.task_val_max_len=16", "--data.task_val_long_max_len=24"})
          .config;
  const std::vector<TaskBand> bands = task_validation_bands(c.data);
  ASSERT_EQ(bands.size(), 3u);
  EXPECT_EQ(bands[0].name, "test");
  EXPECT_EQ(bands[1].name, "train");
  EXPECT_EQ(bands[2].name, "long");
  EXPECT_EQ(bands[2].lengths.min_len, 17);
  EXPECT_EQ(bands[2].lengths.max_len, 24);
  for (const TaskBand& band : bands) {
    const Batch batch = make_task_band_batches(c, band, torch::kCPU)->next();
    EXPECT_EQ(batch.inputs.size(1), band.lengths.max_len);
    const std::int64_t first = band.name == "train" ? 0 : 8;
    for (std::size_t row = 0; row < batch.lengths.size(); ++row) {
      for (std::int64_t p = 0; p < batch.lengths[row]; ++p) {
        const bool scored = batch.targets[std::int64_t(row)][p].item<std::int64_t>() != data::kIgnoreTarget;
        EXPECT_EQ(scored, p >= first) << band.name << " row " << row << " position " << p;
      }
    }
  }
  // An answer-last task scores its answer in every band.
  const config::Config parity_config = parity(run).config;
  for (const TaskBand& band : task_validation_bands(parity_config.data)) EXPECT_EQ(band.first_scored_position, 0);
}

EvalSums sums_with_lengths(std::vector<std::int64_t> correct, std::vector<std::int64_t> total) {
  EvalSums sums;
  sums.loss_sum = 3.5;
  sums.scored_tokens = 7;
  sums.batches = 2;
  sums.counts = {5, 7, 5, 7};
  sums.by_length.correct = std::move(correct);
  sums.by_length.total = std::move(total);
  return sums;
}

// Ranks add their value vectors element by element; the per-length counts
// follow the 7 scalars and survive the sum.
TEST(EvalSums, LengthCountsSurviveTheSumOverRanks) {
  const EvalSums a = sums_with_lengths({0, 0, 1, 4}, {0, 0, 3, 4});
  const EvalSums b = sums_with_lengths({0, 0, 2, 0}, {0, 0, 2, 1});
  const std::vector<double> va = a.to_values(), vb = b.to_values();
  ASSERT_EQ(va.size(), 7u + 2 * 4);
  std::vector<double> summed(va.size());
  for (std::size_t i = 0; i < va.size(); ++i) summed[i] = va[i] + vb[i];
  const EvalSums total = EvalSums::from_values(summed);
  EXPECT_EQ(total.batches, 4);
  EXPECT_EQ(total.counts.correct_tokens, 10);
  EXPECT_EQ(total.by_length.correct, (std::vector<std::int64_t>{0, 0, 3, 4}));
  EXPECT_EQ(total.by_length.total, (std::vector<std::int64_t>{0, 0, 5, 5}));

  const EvalResult result = summarize(total, /*num_classes=*/2);
  using Row = std::array<std::int64_t, 3>;
  EXPECT_EQ(result.answers_by_length, (std::vector<Row>{{2, 3, 5}, {3, 4, 5}}));
  EXPECT_EQ(answers_by_length_json(result), nlohmann::json::parse("[[2, 3, 5], [3, 4, 5]]"));

  EXPECT_EQ(EvalSums::from_values(EvalSums{}.to_values()).by_length.total.size(), 0u);  // shards: none
  std::vector<double> odd = va;
  odd.pop_back();
  EXPECT_THROW(EvalSums::from_values(odd), std::invalid_argument);
  EXPECT_THROW(EvalSums::from_values({1.0, 2.0}), std::invalid_argument);
}

// The formal-language papers' LSTM row: one plain LSTM layer and a linear
// head trains on parity and validates on longer sequences, with the answers
// counted by length.
TEST(TaskEvaluation, PlainLstmTrainsOnParityAndCountsAnswersByLength) {
  TinyRun run;
  const config::ResolvedConfig resolved =
      parity(run, {"--model.structure=plain", "--model.tie_embeddings=false", "--training.steps=6",
                   "--validation.every=3", "--validation.steps=3", "--data.task_val_long_max_len=20"});
  std::ostringstream log;
  Trainer trainer(resolved, log);
  const auto names = trainer.model().named_parameters().keys();
  EXPECT_EQ(names, (std::vector<std::string>{"embedding.weight", "blocks.0.mixer.r", "blocks.0.mixer.b",
                                              "blocks.0.mixer.wx.weight", "head.weight"}));
  const TrainResult result = trainer.run();
  ASSERT_EQ(result.status, TrainStatus::kFinished) << log.str();
  ASSERT_TRUE(result.last_validation) << log.str();
  const EvalResult& validation = *result.last_validation;
  ASSERT_TRUE(validation.accuracy);
  std::int64_t answers = 0, correct = 0;
  for (const auto& [length, right, total] : validation.answers_by_length) {
    EXPECT_GE(length, 10);
    EXPECT_LE(length, 16);
    EXPECT_GT(total, 0);
    EXPECT_LE(right, total);
    answers += total;
    correct += right;
  }
  EXPECT_EQ(answers, 3 * 8);  // validation.steps x local_batch_size, one answer each
  EXPECT_DOUBLE_EQ(*validation.accuracy, double(correct) / double(answers));

  // The validation record holds every band: the test band's scores are the
  // record's own, the training lengths and the long band beside them.
  std::ifstream metrics(run.dir() / "out" / "metrics.jsonl");
  nlohmann::json last_val;
  for (std::string line; std::getline(metrics, line);) {
    const nlohmann::json record = nlohmann::json::parse(line);
    if (record.value("kind", "") == "val") last_val = record;
  }
  ASSERT_TRUE(last_val.contains("bands")) << last_val.dump();
  const nlohmann::json& bands = last_val["bands"];
  EXPECT_EQ(bands["test"]["scaled_accuracy"], last_val["scaled_accuracy"]);
  EXPECT_EQ(bands["train"]["min_len"], 3);
  EXPECT_EQ(bands["train"]["max_len"], 8);
  EXPECT_EQ(bands["long"]["min_len"], 17);
  EXPECT_EQ(bands["long"]["max_len"], 20);
  using Rows = std::vector<std::array<std::int64_t, 3>>;
  for (const auto& [length, right, total] : bands["long"]["answers_by_length"].get<Rows>()) {
    EXPECT_GE(length, 17);
    EXPECT_LE(length, 20);
  }

  // eval's progress hook: once per batch, in order, with the total.
  auto batches = make_validation_batches(resolved.config, 3, torch::kCPU, 0, 1);
  EvalOptions options;
  options.batches = 3;
  options.answer_tokens = {1, 2};
  std::vector<std::pair<std::int64_t, std::int64_t>> calls;
  options.on_batch = [&](std::int64_t done, std::int64_t total) { calls.emplace_back(done, total); };
  evaluate(trainer.model(), *batches, options);
  EXPECT_EQ(calls, (std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 3}, {2, 3}, {3, 3}}));
}

}  // namespace
}  // namespace flashtrain::trainer

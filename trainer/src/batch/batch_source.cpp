#include "flashtrain/trainer/batch/batch_source.h"

#include <torch/torch.h>

#include <stdexcept>

#include "flashtrain/config/consistency.h"
#include "flashtrain/data/error.h"
#include "flashtrain/data/loader.h"
#include "flashtrain/data/tasks.h"
#include "flashtrain/trainer/batch/task_setup.h"

namespace flashtrain::trainer {
namespace {

// [rows, columns] int32 on the host -> int64 on `device`. To a GPU through
// pinned memory, without waiting: the host goes on to the next batch while
// the copy and the steps queued before it run (the pinned block is not reused
// before the copy is done: the caching host allocator records it).
torch::Tensor to_device(const std::int32_t* values, std::int64_t rows, std::int64_t columns,
                        torch::Device device) {
  const torch::Tensor host = torch::from_blob(const_cast<std::int32_t*>(values), {rows, columns}, torch::kInt32);
  if (!device.is_cuda()) return host.to(torch::kLong).to(device);
  torch::Tensor pinned = torch::empty({rows, columns}, torch::TensorOptions(torch::kLong).pinned_memory(true));
  pinned.copy_(host);
  return pinned.to(device, /*non_blocking=*/true);
}

class ShardBatches final : public BatchSource {
 public:
  ShardBatches(data::LoaderOptions options, torch::Device device, std::string split)
      : loader_(std::move(options)), device_(device), split_(std::move(split)) {}

  Batch next() override {
    const data::TokenBatch tokens = loader_.next();
    const torch::Tensor window = to_device(tokens.tokens.data(), tokens.batch_size, tokens.window, device_);
    const std::int64_t T = tokens.window - 1;
    Batch batch;
    batch.inputs = window.narrow(1, 0, T).contiguous();
    batch.targets = window.narrow(1, 1, T).contiguous();
    batch.scored_tokens = tokens.batch_size * T;  // shards have no padding
    return batch;
  }

  nlohmann::json cursor() const override { return {{"kind", "shards"}, {"loader", loader_.cursor()}}; }

  void restore(const nlohmann::json& cursor) override {
    if (cursor.value("kind", "") != "shards")
      throw std::runtime_error("the checkpoint's data cursor is not for token shards: " + cursor.dump());
    try {
      loader_.restore(cursor.at("loader").get<data::LoaderCursor>());
    } catch (const data::CursorMismatch& e) {
      throw DataStreamMismatch(std::string("cannot continue the data stream of the checkpoint: ") + e.what(),
                               config_key(e.setting), e.saved, e.now);
    } catch (const data::DataError& e) {
      throw std::runtime_error(std::string("cannot continue the data stream of the checkpoint: ") + e.what());
    }
  }

  // The config key behind a loader setting (loader_options below).
  static std::string config_key(const std::string& setting) {
    if (setting == "seed") return "training.seed";
    if (setting == "shuffle") return "data.shuffle";
    if (setting == "sequence_length") return "data.seq_len";
    return "data.train_shards";
  }

  std::string describe() const override {
    const data::LoaderOptions& o = loader_.options();
    return split_ + ": " + std::to_string(o.shard_paths.size()) + " shard(s), " +
           std::to_string(loader_.total_windows()) + " windows of " + std::to_string(o.sequence_length) +
           " tokens, " + std::to_string(loader_.steps_per_epoch()) + " batches of " +
           std::to_string(o.batch_size) + " per epoch";
  }

 private:
  data::ShardLoader loader_;
  torch::Device device_;
  std::string split_;
};

class TaskBatches final : public BatchSource {
 public:
  TaskBatches(data::TaskSpec spec, std::uint64_t seed, std::int64_t batch_size, std::int64_t context,
              bool mask_answer, torch::Device device, int rank = 0, int world_size = 1,
              std::int64_t first_scored_position = 0)
      : spec_(spec), seed_(seed), batch_size_(batch_size), context_(context), mask_answer_(mask_answer),
        first_scored_position_(first_scored_position), device_(device), rank_(rank), world_size_(world_size) {}

  Batch next() override {
    // Samples are indexed globally: this rank's B follow the B of every rank before it.
    const std::uint64_t first = next_index_ + std::uint64_t(rank_) * std::uint64_t(batch_size_);
    const data::TaskBatch t = data::make_task_batch(spec_, seed_, first, batch_size_, context_, mask_answer_,
                                                      first_scored_position_);
    next_index_ += std::uint64_t(world_size_) * std::uint64_t(batch_size_);
    Batch batch;
    batch.inputs = to_device(t.input.data(), t.batch_size, t.context, device_);
    batch.targets = to_device(t.target.data(), t.batch_size, t.context, device_);
    for (std::int32_t target : t.target) batch.scored_tokens += target != data::kIgnoreTarget;
    batch.lengths = t.length;
    return batch;
  }

  nlohmann::json cursor() const override {
    return {{"kind", "task"}, {"task", std::string(data::to_string(spec_.task))}, {"seed", seed_},
            {"next_index", next_index_}};
  }

  void restore(const nlohmann::json& cursor) override {
    if (cursor.value("kind", "") != "task")
      throw std::runtime_error("the checkpoint's data cursor is not for a task: " + cursor.dump());
    const std::string saved_task = cursor.value("task", ""), task(data::to_string(spec_.task));
    const auto saved_seed = cursor.value("seed", std::uint64_t(0));
    const std::string what = "the checkpoint's data cursor " + cursor.dump() + " is not for task " + task +
                             " with stream seed " + std::to_string(seed_);
    if (saved_task != task) throw DataStreamMismatch(what, "data.task", saved_task, task);
    if (saved_seed != seed_)  // the training stream's seed is training.seed (task_stream_seed)
      throw DataStreamMismatch(what, "training.seed", std::to_string(saved_seed), std::to_string(seed_));
    next_index_ = cursor.at("next_index").get<std::uint64_t>();
  }

  std::string describe() const override {
    return std::string(data::to_string(spec_.task)) + ": lengths " + std::to_string(spec_.lengths.min_len) + ".." +
           std::to_string(spec_.lengths.max_len) + " in a context of " + std::to_string(context_) + ", " +
           std::to_string(batch_size_) + " samples per batch";
  }

 private:
  data::TaskSpec spec_;
  std::uint64_t seed_;
  std::int64_t batch_size_;
  std::int64_t context_;
  bool mask_answer_;
  std::int64_t first_scored_position_;
  torch::Device device_;
  int rank_;
  int world_size_;
  std::uint64_t next_index_ = 0;  // samples consumed by all ranks together
};

data::LoaderOptions loader_options(const config::Config& c, const std::string& pattern, std::int64_t vocab_size,
                                   bool shuffle, int rank = 0, int world_size = 1) {
  data::LoaderOptions o;
  o.rank = rank;
  o.world_size = world_size;
  o.shard_paths = data::find_shards(pattern);
  o.batch_size = c.training.local_batch_size;
  o.sequence_length = c.data.seq_len;
  o.seed = std::uint64_t(c.training.seed);
  o.shuffle = shuffle;
  o.vocab_size = vocab_size;
  return o;
}

}  // namespace

std::unique_ptr<BatchSource> make_train_batches(const config::Config& c, std::int64_t vocab_size,
                                                torch::Device device, int rank, int world_size) {
  if (!c.data.task.empty())
    return std::make_unique<TaskBatches>(task_spec(c.data, Split::kTrain), task_stream_seed(c, Split::kTrain),
                                         c.training.local_batch_size, task_context(c.data, Split::kTrain),
                                         c.data.task_mask_answer, device, rank, world_size);
  return std::make_unique<ShardBatches>(
      loader_options(c, c.data.train_shards, vocab_size, c.data.shuffle, rank, world_size), device, "train");
}

std::unique_ptr<BatchSource> make_validation_batches(const config::Config& c, std::int64_t vocab_size,
                                                     torch::Device device, int rank, int world_size) {
  if (!c.data.task.empty())
    return make_task_band_batches(c, task_validation_bands(c.data).front(), device, rank, world_size);
  if (c.data.val_shards.empty()) throw std::runtime_error("data.val_shards is empty: no validation data");
  return std::make_unique<ShardBatches>(
      loader_options(c, c.data.val_shards, vocab_size, /*shuffle=*/false, rank, world_size), device, "validation");
}

std::unique_ptr<BatchSource> make_task_band_batches(const config::Config& c, const TaskBand& band,
                                                    torch::Device device, int rank, int world_size) {
  return std::make_unique<TaskBatches>(task_spec(c.data, band), task_stream_seed(c, Split::kValidation),
                                       c.training.local_batch_size, band.lengths.max_len, c.data.task_mask_answer,
                                       device, rank, world_size, band.first_scored_position);
}

std::int64_t validation_batches_per_rank(const config::Config& c, int world_size) {
  return c.validation.steps * config::accumulation_steps(c, world_size);
}

}  // namespace flashtrain::trainer

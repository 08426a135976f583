// A language-model run small enough for unit tests: token shards generated
// into a scratch directory (no corpus needed) from a noisy rule a small LSTM
// learns within a few dozen steps, and a config that trains on them.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "flashtrain/config/load.h"
#include "flashtrain/data/shard_format.h"
#include "flashtrain/data/shard_writer.h"
#include "scratch_dir.h"

namespace flashtrain::trainer::testing {

inline constexpr int kTinyVocab = 32;

// next = (5 * token + 1 + coin) mod 32 with a fair coin: the best possible
// loss is ln 2 = 0.69 nats, against ln 32 = 3.47 for a uniform guess.
inline std::vector<std::int32_t> rule_tokens(std::size_t count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::int32_t> tokens(count);
  tokens[0] = 0;
  for (std::size_t i = 1; i < count; ++i) tokens[i] = (5 * tokens[i - 1] + 1 + int(rng() & 1)) % kTinyVocab;
  return tokens;
}

class TinyRun {
 public:
  TinyRun() {
    data::write_shard((dir_ / "train_000000.bin").string(), data::TokenFormat::kUint16, rule_tokens(20000, 1));
    data::write_shard((dir_ / "train_000001.bin").string(), data::TokenFormat::kUint16, rule_tokens(12000, 2));
    data::write_shard((dir_ / "val_000000.bin").string(), data::TokenFormat::kUint16, rule_tokens(4000, 3));
  }

  // The config text; `extra` flags override it (e.g. --training.steps=12).
  config::ResolvedConfig config(const std::vector<std::string>& extra = {},
                                const std::string& dump_folder = "out") const {
    const std::string text = R"(
[job]
name = "tiny"
dump_folder = ")" + (dir_ / dump_folder).string() + R"("
[model]
kind = "lstm"
dim = 32
n_layers = 1
n_heads = 2
head_dim = 16
vocab_size = 32
backend = "vanilla"
[tokenizer]
path = ""
[data]
train_shards = ")" + (dir_ / "train_*.bin").string() + R"("
val_shards = ")" + (dir_ / "val_*.bin").string() + R"("
seq_len = 16
[optimizer]
lr = 1e-2
weight_decay = 0.1
[lr_scheduler]
warmup_steps = 3
decay = "cosine"
[training]
steps = 30
local_batch_size = 8
mixed_precision = "fp32"
device = "cpu"
seed = 7
[validation]
every = 10
steps = 4
[checkpoint]
interval = 0
keep_last = 2
[metrics]
log_every = 5
)";
    return config::load_config_text(text, "tiny.toml", extra);
  }

  const ScratchDir& dir() const { return dir_; }

 private:
  ScratchDir dir_;
};

}  // namespace flashtrain::trainer::testing

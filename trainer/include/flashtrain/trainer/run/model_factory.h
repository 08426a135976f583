// The model and device a config describes.
#pragma once

#include <cstdint>

#include <torch/types.h>

#include "flashtrain/config/resolved_config.h"
#include "flashtrain/models/language_model.h"

namespace flashtrain::trainer {

// model.vocab_size, else the tokenizer's vocabulary, else (tasks) the task's.
// A model.vocab_size below the tokenizer's pieces is a ConfigError at the key.
std::int64_t resolve_vocab_size(const config::ResolvedConfig& resolved);

// training.device: auto = cuda when a GPU is present, else cpu. Throws
// ConfigError for cuda without a GPU.
torch::Device resolve_device(const config::ResolvedConfig& resolved);

// Seeds torch's generators with training.seed, then builds the model on `device`
// (so the initial weights depend on the seed only).
models::LanguageModel build_model(const config::ResolvedConfig& resolved, std::int64_t vocab_size,
                                  torch::Device device);

}  // namespace flashtrain::trainer

// Export of a trained model for other tools, written as one directory that
// appears whole or not at all (staged_directory.h):
//
//   model.safetensors   the parameters (float32), dotted names, {"format": "pt"} metadata
//   config.json         the architecture (vocab_size, d_model, blocks, heads, ...),
//                       step and tokens seen, and the full training config
//   tokenizer.model     the SentencePiece model (language modelling runs)
//   manifest.json       sizes and checksums
#pragma once

#include <filesystem>

#include <nlohmann/json.hpp>

#include "flashtrain/config/config.h"
#include "flashtrain/models/language_model.h"
#include "flashtrain/trainer/checkpoint/training_checkpoint.h"

namespace flashtrain::trainer {

// What config.json holds.
nlohmann::json export_config_json(const config::Config& config, const models::LanguageModelImpl& model,
                                  const TrainingProgress& progress);

// Writes the export to `output`, which must not exist (nothing is replaced).
void export_model(const config::Config& config, const models::LanguageModelImpl& model,
                  const TrainingProgress& progress, const std::filesystem::path& output);

}  // namespace flashtrain::trainer

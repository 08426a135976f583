// Named torch tensors in safetensors files (safetensors.h), for checkpoints
// and exports.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include <torch/types.h>

#include "flashtrain/trainer/step/optimizer.h"
#include "flashtrain/trainer/checkpoint/staged_directory.h"

namespace flashtrain::trainer {

// "F32", "BF16", ... for a torch dtype; throws std::invalid_argument for
// dtypes safetensors has no name for.
std::string safetensors_dtype(torch::ScalarType type);
torch::ScalarType torch_dtype(const std::string& safetensors_dtype);

// Writes `tensors` (any device; copied to the host one at a time) as
// `file_name` in `directory`.
void write_tensor_file(StagedDirectory& directory, const std::string& file_name, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// Every tensor of a safetensors file, on the host.
std::map<std::string, torch::Tensor> read_tensor_file(const std::filesystem::path& path);

// Copies `tensors` into the model's parameters. The names must match exactly;
// otherwise std::runtime_error lists the missing and unexpected ones, or the
// first shape or dtype that differs, or the first tensor holding NaN or inf.
void load_parameters(torch::nn::Module& model, const std::map<std::string, torch::Tensor>& tensors,
                     const std::string& source);

}  // namespace flashtrain::trainer

#include "flashtrain/trainer/checkpoint/tensor_file.h"

#include <torch/torch.h>

#include <stdexcept>

#include "flashtrain/trainer/checkpoint/safetensors.h"

namespace flashtrain::trainer {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors data is little-endian; so is torch's memory here");

const std::map<torch::ScalarType, std::string>& dtype_names() {
  static const std::map<torch::ScalarType, std::string> names = {
      {torch::kFloat64, "F64"}, {torch::kFloat32, "F32"}, {torch::kFloat16, "F16"}, {torch::kBFloat16, "BF16"},
      {torch::kInt64, "I64"},   {torch::kInt32, "I32"},   {torch::kInt16, "I16"},   {torch::kInt8, "I8"},
      {torch::kUInt8, "U8"},    {torch::kBool, "BOOL"}};
  return names;
}

}  // namespace

std::string safetensors_dtype(torch::ScalarType type) {
  const auto it = dtype_names().find(type);
  if (it == dtype_names().end())
    throw std::invalid_argument(std::string("no safetensors dtype for torch dtype ") + c10::toString(type));
  return it->second;
}

torch::ScalarType torch_dtype(const std::string& name) {
  for (const auto& [type, text] : dtype_names())
    if (text == name) return type;
  throw std::invalid_argument("no torch dtype for safetensors dtype " + name);
}

void write_tensor_file(StagedDirectory& directory, const std::string& file_name, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata) {
  // Host copies: one per tensor, alive until the file is written (a model's
  // worth of memory; the loop does not run meanwhile).
  std::vector<torch::Tensor> host;
  std::vector<TensorBytes> entries;
  host.reserve(tensors.size());
  for (const auto& [name, tensor] : tensors) {
    host.push_back(tensor.detach().to(torch::kCPU).contiguous());
    const torch::Tensor& t = host.back();
    entries.push_back({name, safetensors_dtype(t.scalar_type()),
                       std::vector<std::int64_t>(t.sizes().begin(), t.sizes().end()), t.data_ptr(), t.nbytes()});
  }
  StagedDirectory::File file = directory.create_file(file_name);
  write_safetensors(entries, metadata, [&](const void* data, std::size_t bytes) { file.write(data, bytes); });
  file.close();
}

std::map<std::string, torch::Tensor> read_tensor_file(const std::filesystem::path& path) {
  const SafetensorsFile file = SafetensorsFile::read(path.string());
  std::map<std::string, torch::Tensor> out;
  for (const auto& [name, entry] : file.tensors()) {
    const torch::Tensor view = torch::from_blob(const_cast<char*>(entry.data), entry.shape,
                                                torch::TensorOptions(torch_dtype(entry.dtype)));
    out.emplace(name, view.clone());  // the file's buffer dies with `file`
  }
  return out;
}

void load_parameters(torch::nn::Module& model, const std::map<std::string, torch::Tensor>& tensors,
                     const std::string& source) {
  const auto parameters = model.named_parameters();
  std::string missing, unexpected;
  for (const auto& item : parameters)
    if (!tensors.count(item.key())) missing += " " + item.key();
  for (const auto& [name, tensor] : tensors)
    if (!parameters.contains(name)) unexpected += " " + name;
  if (!missing.empty() || !unexpected.empty())
    throw std::runtime_error(source + " does not fit the model:" +
                             (missing.empty() ? "" : " missing" + missing + ";") +
                             (unexpected.empty() ? "" : " unexpected" + unexpected));
  torch::NoGradGuard no_grad;
  for (const auto& item : parameters) {
    const torch::Tensor& stored = tensors.at(item.key());
    torch::Tensor p = item.value();
    if (stored.sizes() != p.sizes() || stored.scalar_type() != p.scalar_type())
      throw std::runtime_error(source + ": " + item.key() + " is " + c10::toString(stored.scalar_type()) + " " +
                               c10::str(stored.sizes()) + "; the model has " + c10::toString(p.scalar_type()) +
                               " " + c10::str(p.sizes()));
    if (stored.is_floating_point()) {
      const std::int64_t bad = stored.numel() - torch::isfinite(stored).sum().item<std::int64_t>();
      if (bad > 0)
        throw std::runtime_error(source + ": " + item.key() + " holds " + std::to_string(bad) +
                                 " non-finite values (NaN or inf): these weights cannot be trained on, evaluated "
                                 "or exported; use an earlier checkpoint");
    }
    p.copy_(stored);
  }
}

}  // namespace flashtrain::trainer

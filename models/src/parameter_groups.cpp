#include "flashtrain/models/parameter_groups.h"

#include <torch/torch.h>

#include <cstdio>
#include <string>

namespace flashtrain::models {

namespace {

// "blocks.<i>.<part>...": the block index and what follows the index.
bool split_block_name(const std::string& name, size_t* index, std::string* rest) {
  const std::string prefix = "blocks.";
  if (name.rfind(prefix, 0) != 0) return false;
  const size_t dot = name.find('.', prefix.size());
  if (dot == std::string::npos) return false;
  *index = std::stoul(name.substr(prefix.size(), dot - prefix.size()));
  *rest = name.substr(dot + 1);
  return true;
}

std::string group_of(const std::string& name, const LanguageModelImpl& model) {
  size_t index = 0;
  std::string rest;
  if (split_block_name(name, &index, &rest)) {
    if (rest.rfind("mixer.", 0) == 0)
      return std::string(to_string(model.blocks().at(index)->kind())) + " mixers";
    if (rest.rfind("ffn.", 0) == 0) return "feed-forward";
    return "norms";  // mixer_norm, ffn_norm
  }
  if (name.rfind("embedding.", 0) == 0) return "embedding";
  if (name.rfind("head.", 0) == 0) return "head";
  return "norms";  // final_norm
}

std::string with_thousands(int64_t n) {
  std::string digits = std::to_string(n);
  for (int i = int(digits.size()) - 3; i > 0; i -= 3) digits.insert(size_t(i), ",");
  return digits;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

bool takes_weight_decay(const std::string& name) {
  if (name.rfind("embedding.", 0) == 0) return false;
  if (name.find("norm.") != std::string::npos)
    return false;  // mixer_norm, ffn_norm, group_norm, final_norm
  for (const char* bias : {".b", ".bias", ".gate_bias"})
    if (ends_with(name, bias)) return false;
  return true;
}

std::vector<ParameterGroup> count_parameters_by_group(const LanguageModelImpl& model) {
  std::vector<ParameterGroup> groups{{"embedding", 0}};
  for (const ResidualBlock& block : model.blocks()) {
    const std::string name = std::string(to_string(block->kind())) + " mixers";
    bool seen = false;
    for (const ParameterGroup& g : groups) seen = seen || g.name == name;
    if (!seen) groups.push_back({name, 0});
  }
  groups.push_back({"feed-forward", 0});
  groups.push_back({"norms", 0});
  groups.push_back({"head", 0});
  for (const auto& item : model.named_parameters()) {
    const std::string group = group_of(item.key(), model);
    for (ParameterGroup& g : groups)
      if (g.name == group) g.count += item.value().numel();
  }
  std::vector<ParameterGroup> non_empty;
  for (const ParameterGroup& g : groups)
    if (g.count > 0) non_empty.push_back(g);
  return non_empty;
}

std::string format_parameter_counts(const std::vector<ParameterGroup>& groups) {
  int64_t total = 0, embedding = 0;
  for (const ParameterGroup& g : groups) {
    total += g.count;
    if (g.name == "embedding") embedding = g.count;
  }
  std::string table;
  const auto line = [&table](const std::string& name, int64_t count) {
    char buffer[96];
    std::snprintf(buffer, sizeof buffer, "  %-22s %15s\n", name.c_str(),
                  with_thousands(count).c_str());
    table += buffer;
  };
  for (const ParameterGroup& g : groups) line(g.name, g.count);
  line("total", total);
  line("total w/o embedding", total - embedding);
  return table;
}

}  // namespace flashtrain::models

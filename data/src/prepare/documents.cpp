#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <system_error>

#include "flashtrain/data/error.h"
#include "flashtrain/data/prepare.h"
#include "flashtrain/data/rng.h"
#include "jsonl.h"

namespace flashtrain::data {
namespace fs = std::filesystem;

namespace {

bool is_hidden(const fs::path& relative) {
  for (const auto& part : relative) {
    if (!part.empty() && part.string()[0] == '.') return true;
  }
  return false;
}

void add_directory(const fs::path& root, std::vector<Document>& out) {
  std::error_code error;
  fs::recursive_directory_iterator it(root, error), end;
  if (error) throw DataError("cannot list input directory '" + root.string() + "': " + error.message());
  for (; it != end; it.increment(error)) {
    if (error) throw DataError("cannot list input directory '" + root.string() + "': " + error.message());
    const fs::path relative = it->path().lexically_relative(root);
    if (is_hidden(relative)) continue;
    if (!it->is_regular_file()) continue;
    if (it->path().extension() == ".txt") {
      out.push_back({relative.generic_string(), it->path().string()});
    } else if (is_jsonl(it->path())) {
      add_jsonl_documents(it->path(), relative.generic_string(), out);
    }
  }
}

// A uniform draw in [0, 1) from a document's name: the split does not depend
// on which other documents exist.
double split_key(const std::string& name, std::uint64_t seed) {
  const std::uint64_t h = derive_seed({hash_name("document split"), seed, hash_name(name)});
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

}  // namespace

std::vector<Document> find_documents(const std::vector<std::string>& inputs) {
  if (inputs.empty()) throw DataError("no inputs given");
  std::vector<Document> documents;
  for (const std::string& input : inputs) {
    const fs::path path(input);
    std::error_code error;
    const fs::file_status status = fs::status(path, error);
    if (error || !fs::exists(status)) throw DataError("input '" + input + "' does not exist");
    const std::size_t before = documents.size();
    if (fs::is_directory(status)) {
      add_directory(path, documents);
      if (documents.size() == before)
        throw DataError("input directory '" + input + "' holds no *.txt, *.jsonl, *.jsonl.gz or *.jsonl.zst file");
    } else if (is_jsonl(path)) {
      add_jsonl_documents(path, path.filename().string(), documents);
      if (documents.size() == before) throw DataError("input '" + input + "' holds no JSON line");
    } else if (path.extension() == ".parquet") {
      throw DataError("input '" + input + "' is Parquet, which prepare does not read; convert it to JSON lines "
                      "first: .venv/bin/python data/tools/parquet_to_jsonl.py " + input + " --output DIR, then "
                      "prepare DIR");
    } else {
      documents.push_back({path.filename().string(), input});
    }
  }
  std::sort(documents.begin(), documents.end(),
            [](const Document& a, const Document& b) { return a.name < b.name; });
  const auto duplicate = std::adjacent_find(documents.begin(), documents.end(),
                                            [](const Document& a, const Document& b) { return a.name == b.name; });
  if (duplicate != documents.end()) {
    throw DataError("two documents are named '" + duplicate->name + "': '" + duplicate->path +
                    "' and '" + (duplicate + 1)->path + "'");
  }
  return documents;
}

DocumentSplit split_documents(const std::vector<Document>& documents, double val_fraction,
                              std::uint64_t split_seed) {
  if (!(val_fraction >= 0.0 && val_fraction < 1.0)) {
    throw DataError("val_fraction must be in [0, 1), got " + std::to_string(val_fraction));
  }
  DocumentSplit split;
  std::vector<double> keys;
  for (const Document& d : documents) {
    keys.push_back(split_key(d.name, split_seed));
    (keys.back() < val_fraction ? split.val : split.train).push_back(d);
  }
  if (val_fraction > 0.0 && documents.size() >= 2 && (split.val.empty() || split.train.empty())) {
    // Too few documents for the fraction to pick any (or to leave any): move
    // the one document nearest the threshold across.
    const bool need_val = split.val.empty();
    std::size_t pick = 0;
    double best = need_val ? std::numeric_limits<double>::infinity() : -1.0;
    for (std::size_t i = 0; i < documents.size(); ++i) {
      if (need_val ? keys[i] < best : keys[i] > best) {
        best = keys[i];
        pick = i;
      }
    }
    auto& from = need_val ? split.train : split.val;
    auto& to = need_val ? split.val : split.train;
    const auto it = std::find_if(from.begin(), from.end(),
                                 [&](const Document& d) { return d.name == documents[pick].name; });
    to.push_back(*it);
    from.erase(it);
  }
  return split;
}

}  // namespace flashtrain::data

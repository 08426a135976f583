#include "jsonl.h"

#include <zlib.h>

#include <cstdio>

#include <nlohmann/json.hpp>

#include "flashtrain/data/error.h"

namespace flashtrain::data {
namespace fs = std::filesystem;

namespace {

std::string where(const std::string& path, std::int64_t line) {
  return "'" + path + "' line " + std::to_string(line + 1);
}

// A file read line by line through zlib, which reads uncompressed files as they are.
class LineReader {
 public:
  explicit LineReader(const std::string& path) : path_(path), file_(gzopen(path.c_str(), "rb")) {
    if (file_ == nullptr) throw DataError("cannot open '" + path + "'");
    gzbuffer(file_, 1 << 20);
  }
  ~LineReader() {
    if (file_ != nullptr) gzclose(file_);
  }
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next line without its newline; false at the end.
  bool next(std::string& line) {
    line.clear();
    char buffer[1 << 16];
    for (;;) {
      if (gzgets(file_, buffer, sizeof buffer) == nullptr) {
        int code = Z_OK;
        const char* message = gzerror(file_, &code);
        if (code != Z_OK && code != Z_STREAM_END) throw DataError("cannot read '" + path_ + "': " + message);
        ++number_;
        return !line.empty();
      }
      line += buffer;
      if (!line.empty() && line.back() == '\n') {
        line.pop_back();
        if (!line.empty() && line.back() == '\r') line.pop_back();
        ++number_;
        return true;
      }
    }
  }
  // The 0-based number of the line next() returned last.
  std::int64_t number() const { return number_ - 1; }

 private:
  std::string path_;
  gzFile file_;
  std::int64_t number_ = 0;
};

bool blank(const std::string& line) { return line.find_first_not_of(" \t") == std::string::npos; }

}  // namespace

bool is_jsonl(const fs::path& path) {
  const std::string name = path.filename().string();
  const auto ends_with = [&](const std::string& suffix) {
    return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends_with(".jsonl") || ends_with(".jsonl.gz");
}

void add_jsonl_documents(const fs::path& path, const std::string& name, std::vector<Document>& out) {
  LineReader reader(path.string());
  std::string line;
  while (reader.next(line)) {
    if (blank(line)) continue;
    char number[24];
    std::snprintf(number, sizeof number, "%010lld", static_cast<long long>(reader.number() + 1));
    out.push_back({name + ":" + number, path.string(), reader.number()});
  }
}

std::string jsonl_text(const std::string& line, const std::string& field, const Document& document) {
  const nlohmann::json record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (record.is_discarded() || !record.is_object())
    throw DataError(where(document.path, document.line) + " is not a JSON object");
  const auto text = record.find(field);
  if (text == record.end() || !text->is_string())
    throw DataError(where(document.path, document.line) + " has no string field '" + field +
                    "' (--text-field names the field that holds the text)");
  return text->get<std::string>();
}

struct JsonlCursor::Stream {
  std::string path;
  std::unique_ptr<LineReader> reader;
};

JsonlCursor::JsonlCursor() : stream_(std::make_unique<Stream>()) {}
JsonlCursor::~JsonlCursor() = default;

std::string JsonlCursor::line_of(const Document& document) {
  Stream& s = *stream_;
  if (!s.reader || s.path != document.path || s.reader->number() >= document.line) {
    s.reader = std::make_unique<LineReader>(document.path);
    s.path = document.path;
  }
  std::string line;
  while (s.reader->next(line)) {
    if (s.reader->number() == document.line) return line;
  }
  throw DataError(where(document.path, document.line) + " is missing: the file changed while prepare read it");
}

}  // namespace flashtrain::data

#include "jsonl.h"

#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "flashtrain/data/error.h"

namespace flashtrain::data {
namespace fs = std::filesystem;

namespace {

std::string where(const std::string& path, std::int64_t line) {
  return "'" + path + "' line " + std::to_string(line + 1);
}

// The bytes of an input file: through zlib (gzip, or a plain file as it is) or,
// for .zst, through zstd's streaming decoder.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Up to `size` bytes into `out`; 0 at the end. Throws DataError.
  virtual std::size_t read(char* out, std::size_t size) = 0;
};

class GzipSource : public ByteSource {
 public:
  explicit GzipSource(const std::string& path) : path_(path), file_(gzopen(path.c_str(), "rb")) {
    if (file_ == nullptr) throw DataError("cannot open '" + path + "'");
    gzbuffer(file_, 1 << 20);
  }
  ~GzipSource() override { gzclose(file_); }

  std::size_t read(char* out, std::size_t size) override {
    const int n = gzread(file_, out, static_cast<unsigned>(std::min<std::size_t>(size, 1 << 30)));
    if (n < 0) {
      int code = Z_OK;
      throw DataError("cannot read '" + path_ + "': " + gzerror(file_, &code));
    }
    return static_cast<std::size_t>(n);
  }

 private:
  std::string path_;
  gzFile file_;
};

class ZstdSource : public ByteSource {
 public:
  explicit ZstdSource(const std::string& path)
      : path_(path), file_(std::fopen(path.c_str(), "rb")), stream_(ZSTD_createDStream()), in_(ZSTD_DStreamInSize()) {
    if (file_ == nullptr) throw DataError("cannot open '" + path + "'");
    if (stream_ == nullptr) throw DataError("cannot read '" + path + "': zstd has no memory for a decoder");
  }
  ~ZstdSource() override {
    ZSTD_freeDStream(stream_);
    std::fclose(file_);
  }

  std::size_t read(char* out, std::size_t size) override {
    ZSTD_outBuffer output{out, size, 0};
    while (output.pos == 0) {
      if (input_.pos == input_.size) {
        const std::size_t n = std::fread(in_.data(), 1, in_.size(), file_);
        if (n == 0) {
          if (std::ferror(file_)) throw DataError("cannot read '" + path_ + "'");
          // The end of the file must be the end of a frame.
          if (frame_left_ != 0) throw DataError("cannot read '" + path_ + "': the zstd stream is truncated");
          return 0;
        }
        input_ = {in_.data(), n, 0};
      }
      frame_left_ = ZSTD_decompressStream(stream_, &output, &input_);
      if (ZSTD_isError(frame_left_))
        throw DataError("cannot read '" + path_ + "': " + ZSTD_getErrorName(frame_left_) + " (not zstd data?)");
    }
    return output.pos;
  }

 private:
  std::string path_;
  std::FILE* file_;
  ZSTD_DStream* stream_;
  std::vector<char> in_;
  ZSTD_inBuffer input_{nullptr, 0, 0};
  std::size_t frame_left_ = 0;  // ZSTD_decompressStream's hint: 0 when a frame has just ended
};

bool ends_with(const std::string& name, const std::string& suffix) {
  return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A file's lines, through the source its name calls for.
class LineReader {
 public:
  explicit LineReader(const std::string& path) : buffer_(1 << 20) {
    if (ends_with(path, ".zst")) source_ = std::make_unique<ZstdSource>(path);
    else source_ = std::make_unique<GzipSource>(path);
  }

  // The next line without its newline (or \r\n); false at the end.
  bool next(std::string& line) {
    line.clear();
    for (;;) {
      if (begin_ == end_) {
        begin_ = 0;
        end_ = source_->read(buffer_.data(), buffer_.size());
        if (end_ == 0) {
          ++number_;
          return !line.empty();
        }
      }
      const char* start = buffer_.data() + begin_;
      const void* newline = std::memchr(start, '\n', end_ - begin_);
      if (newline == nullptr) {
        line.append(start, end_ - begin_);
        begin_ = end_;
        continue;
      }
      const std::size_t length = static_cast<const char*>(newline) - start;
      line.append(start, length);
      begin_ += length + 1;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      ++number_;
      return true;
    }
  }
  // The 0-based number of the line next() returned last.
  std::int64_t number() const { return number_ - 1; }

 private:
  std::unique_ptr<ByteSource> source_;
  std::vector<char> buffer_;
  std::size_t begin_ = 0, end_ = 0;
  std::int64_t number_ = 0;
};

bool blank(const std::string& line) { return line.find_first_not_of(" \t") == std::string::npos; }

}  // namespace

bool is_jsonl(const fs::path& path) {
  const std::string name = path.filename().string();
  return ends_with(name, ".jsonl") || ends_with(name, ".jsonl.gz") || ends_with(name, ".jsonl.zst");
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

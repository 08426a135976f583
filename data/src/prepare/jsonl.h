// Private: documents stored as JSON lines (.jsonl, or compressed .jsonl.gz and
// .jsonl.zst), as corpora ship: each non-empty line an object whose text field
// is one document. Read as a stream, never whole, and never a file per
// document: a Document names its file and line, and a JsonlCursor reads the
// lines of a sorted list of such documents forward, once.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "flashtrain/data/prepare.h"

namespace flashtrain::data {

// foo.jsonl, foo.jsonl.gz or foo.jsonl.zst.
bool is_jsonl(const std::filesystem::path& path);

// One Document per non-empty line of `path`, named `name` + ":" + the line
// number (1-based, zero-padded, so that names sort in file order).
void add_jsonl_documents(const std::filesystem::path& path, const std::string& name,
                         std::vector<Document>& out);

// The document's text: the string `field` of the JSON object on `line`.
// Throws DataError naming the file and line otherwise.
std::string jsonl_text(const std::string& line, const std::string& field, const Document& document);

// The raw lines of jsonl documents, asked for in (path, line) order.
class JsonlCursor {
 public:
  JsonlCursor();
  ~JsonlCursor();
  JsonlCursor(const JsonlCursor&) = delete;
  JsonlCursor& operator=(const JsonlCursor&) = delete;
  // The line of `document` (a jsonl one, after the previous one asked for).
  std::string line_of(const Document& document);

 private:
  struct Stream;
  std::unique_ptr<Stream> stream_;
};

}  // namespace flashtrain::data

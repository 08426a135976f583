// Private: encodes documents on several threads and hands the results over
// in document order, so the output is the same for any number of threads.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "flashtrain/data/prepare.h"
#include "flashtrain/data/tokenizer.h"

namespace flashtrain::data {

struct EncodedDocument {
  std::vector<std::int32_t> tokens;  // [bos] + text + [eos]
  std::int64_t bytes = 0;            // of the text
};

// Calls `sink(index, document)` for every document, in index order, on the
// calling thread. At most a few documents per thread wait in memory. An
// exception from a worker or from `sink` stops the work and is rethrown.
// JSON-lines documents (sorted by name: their files' order) are read one after
// the other as the workers claim them, their `text_field` taken and encoded
// in parallel.
void encode_in_order(const std::vector<Document>& documents, const Tokenizer& tokenizer,
                     int threads, const std::string& text_field,
                     const std::function<void(std::size_t, EncodedDocument&&)>& sink);

}  // namespace flashtrain::data

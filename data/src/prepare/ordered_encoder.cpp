#include "ordered_encoder.h"

#include <condition_variable>
#include <exception>
#include <fstream>
#include <mutex>
#include <optional>
#include <iterator>
#include <thread>

#include "flashtrain/data/error.h"
#include "jsonl.h"

namespace flashtrain::data {
namespace {

std::string file_text(const Document& document) {
  std::ifstream in(document.path, std::ios::binary);
  if (!in) throw DataError("cannot open document '" + document.path + "'");
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw DataError("cannot read document '" + document.path + "'");
  return content;
}

EncodedDocument encode_text(const std::string& content, const Tokenizer& tokenizer) {
  EncodedDocument encoded;
  encoded.bytes = static_cast<std::int64_t>(content.size());
  encoded.tokens.push_back(tokenizer.bos_id());
  const std::vector<std::int32_t> body = tokenizer.encode(content);
  encoded.tokens.insert(encoded.tokens.end(), body.begin(), body.end());
  encoded.tokens.push_back(tokenizer.eos_id());
  return encoded;
}

}  // namespace

void encode_in_order(const std::vector<Document>& documents, const Tokenizer& tokenizer,
                     int threads, const std::string& text_field,
                     const std::function<void(std::size_t, EncodedDocument&&)>& sink) {
  const std::size_t n = documents.size();
  const std::size_t window = static_cast<std::size_t>(std::max(1, threads)) * 4;
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::optional<EncodedDocument>> done(n);
  std::size_t next_to_claim = 0;
  std::size_t next_to_hand_over = 0;
  bool stop = false;
  std::exception_ptr error;
  JsonlCursor cursor;  // read under the lock, in claim order: the documents' order

  auto fail = [&](std::exception_ptr e) {
    const std::lock_guard<std::mutex> lock(mutex);
    if (!error) error = e;
    stop = true;
    changed.notify_all();
  };

  auto worker = [&] {
    for (;;) {
      std::size_t index;
      std::string line;  // a JSON-lines document's line, read in order under the lock
      try {
        std::unique_lock<std::mutex> lock(mutex);
        // Stay at most `window` documents ahead of the sink.
        changed.wait(lock, [&] { return stop || next_to_claim >= n || next_to_claim < next_to_hand_over + window; });
        if (stop || next_to_claim >= n) return;
        index = next_to_claim++;
        if (documents[index].line >= 0) line = cursor.line_of(documents[index]);
      } catch (...) {
        fail(std::current_exception());
        return;
      }
      try {
        const Document& document = documents[index];
        EncodedDocument encoded = encode_text(
            document.line < 0 ? file_text(document) : jsonl_text(line, text_field, document), tokenizer);
        const std::lock_guard<std::mutex> lock(mutex);
        done[index] = std::move(encoded);
        changed.notify_all();
      } catch (...) {
        fail(std::current_exception());
        return;
      }
    }
  };

  std::vector<std::thread> pool;
  for (int t = 0; t < std::max(1, threads); ++t) pool.emplace_back(worker);
  try {
    for (std::size_t i = 0; i < n; ++i) {
      EncodedDocument encoded;
      {
        std::unique_lock<std::mutex> lock(mutex);
        changed.wait(lock, [&] { return stop || done[i].has_value(); });
        if (stop) break;
        encoded = std::move(*done[i]);
        done[i].reset();
        next_to_hand_over = i + 1;
        changed.notify_all();
      }
      sink(i, std::move(encoded));
    }
  } catch (...) {
    fail(std::current_exception());
  }
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace flashtrain::data

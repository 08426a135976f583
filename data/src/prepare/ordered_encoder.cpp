#include "ordered_encoder.h"

#include <condition_variable>
#include <exception>
#include <fstream>
#include <mutex>
#include <optional>
#include <iterator>
#include <thread>

#include "flashtrain/data/error.h"

namespace flashtrain::data {
namespace {

EncodedDocument encode_document(const Document& document, const Tokenizer& tokenizer) {
  std::ifstream in(document.path, std::ios::binary);
  if (!in) throw DataError("cannot open document '" + document.path + "'");
  const std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw DataError("cannot read document '" + document.path + "'");
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
                     int threads,
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

  auto fail = [&](std::exception_ptr e) {
    const std::lock_guard<std::mutex> lock(mutex);
    if (!error) error = e;
    stop = true;
    changed.notify_all();
  };

  auto worker = [&] {
    for (;;) {
      std::size_t index;
      {
        std::unique_lock<std::mutex> lock(mutex);
        // Stay at most `window` documents ahead of the sink.
        changed.wait(lock, [&] { return stop || next_to_claim >= n || next_to_claim < next_to_hand_over + window; });
        if (stop || next_to_claim >= n) return;
        index = next_to_claim++;
      }
      try {
        EncodedDocument encoded = encode_document(documents[index], tokenizer);
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

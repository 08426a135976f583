#include "progress_line.h"

#include <unistd.h>

#include <cstdio>

namespace flashtrain::data {

ProgressLine::ProgressLine(std::string label, std::int64_t total_documents, bool enabled)
    : label_(std::move(label)),
      total_(total_documents),
      enabled_(enabled),
      terminal_(::isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()),
      last_print_(start_) {}

void ProgressLine::update(std::int64_t documents, std::int64_t tokens, std::int64_t bytes) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  // Redraw a few times a second on a terminal; log every 10 s otherwise.
  const auto interval = terminal_ ? std::chrono::milliseconds(250) : std::chrono::milliseconds(10000);
  if (now - last_print_ < interval) return;
  last_print_ = now;
  print(documents, tokens, bytes, false);
}

void ProgressLine::finish(std::int64_t documents, std::int64_t tokens, std::int64_t bytes) {
  if (enabled_) print(documents, tokens, bytes, true);
}

void ProgressLine::print(std::int64_t documents, std::int64_t tokens, std::int64_t bytes, bool final) {
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const int width = 30;
  const int filled = total_ > 0 ? static_cast<int>(width * documents / total_) : width;
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.resize(width, '.');
  std::fprintf(stderr, "%s%s [%s] %lld/%lld documents, %.2f M tokens, %.1f MB/s, %.1f s%s",
               terminal_ ? "\r" : "", label_.c_str(), bar.c_str(), static_cast<long long>(documents),
               static_cast<long long>(total_), tokens / 1e6,
               seconds > 0 ? bytes / 1e6 / seconds : 0.0, seconds,
               terminal_ && !final ? "" : "\n");
  std::fflush(stderr);
}

}  // namespace flashtrain::data

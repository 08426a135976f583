#include "flashtrain/trainer/run/metrics_log.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "flashtrain/data/atomic_file.h"

namespace flashtrain::trainer {

MetricsLog::MetricsLog(const std::string& path) : path_(path) {
  if (path_.empty()) return;
  const std::filesystem::path parent = std::filesystem::path(path_).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  out_.open(path_, std::ios::app);
  if (!out_) throw std::runtime_error("cannot open the metrics file " + path_ + ": " + std::strerror(errno));
}

void MetricsLog::write(const nlohmann::json& record) {
  if (!out_.is_open()) return;
  // Non-finite numbers have no JSON form; nlohmann writes them as null.
  out_ << record.dump() << '\n';
  out_.flush();
  if (!out_) throw std::runtime_error("cannot write the metrics file " + path_);
}

std::int64_t MetricsLog::start_over() {
  if (!out_.is_open()) return 0;
  out_.close();
  std::int64_t dropped = 0;
  {
    std::ifstream in(path_);
    for (std::string line; std::getline(in, line);) dropped += line.empty() ? 0 : 1;
  }
  if (dropped > 0) data::write_file_atomically(path_, "");
  out_.open(path_, std::ios::app);
  if (!out_) throw std::runtime_error("cannot open the metrics file " + path_ + ": " + std::strerror(errno));
  return dropped;
}

std::int64_t MetricsLog::drop_after(std::int64_t step) {
  if (!out_.is_open()) return 0;
  out_.close();
  std::string kept;
  std::int64_t dropped = 0;
  {
    std::ifstream in(path_);
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      const nlohmann::json record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      const bool later = record.is_object() && record.contains("step") && record["step"].is_number() &&
                         record["step"].get<std::int64_t>() > step;
      if (record.is_discarded() || !record.is_object() || later) {
        ++dropped;
        continue;
      }
      kept += line + '\n';
    }
  }
  if (dropped > 0) {
    data::AtomicFileWriter rewrite(path_);
    rewrite.write(kept.data(), kept.size());
    rewrite.commit();
  }
  out_.open(path_, std::ios::app);
  if (!out_) throw std::runtime_error("cannot open the metrics file " + path_ + ": " + std::strerror(errno));
  return dropped;
}

}  // namespace flashtrain::trainer

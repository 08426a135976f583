#include "flashtrain/trainer/metrics_log.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

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

}  // namespace flashtrain::trainer

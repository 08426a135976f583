#include "flashtrain/trainer/run/progress.h"

#include <cmath>
#include <cstdio>

namespace flashtrain::trainer {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const long long s = std::llround(seconds);
  char text[32];
  if (s < 60) std::snprintf(text, sizeof text, "%llds", s);
  else if (s < 3600) std::snprintf(text, sizeof text, "%lldm%02llds", s / 60, s % 60);
  else if (s < 86400) std::snprintf(text, sizeof text, "%lldh%02lldm", s / 3600, s % 3600 / 60);
  else std::snprintf(text, sizeof text, "%lldd%02lldh", s / 86400, s % 86400 / 3600);
  return text;
}

std::string format_rate(double per_second) {
  char text[32];
  if (per_second < 1e3) std::snprintf(text, sizeof text, "%.0f", per_second);
  else if (per_second < 1e6) std::snprintf(text, sizeof text, "%.1fk", per_second / 1e3);
  else std::snprintf(text, sizeof text, "%.2fM", per_second / 1e6);
  return text;
}

std::string format_progress_line(const ProgressLine& p) {
  const int width = int(std::to_string(p.total_steps).size());
  char text[256];
  std::snprintf(text, sizeof text, "step %*lld/%lld | loss %.4f | lr %.2e | grad %.3f | %s tok/s | ETA %s",
                width, static_cast<long long>(p.step), static_cast<long long>(p.total_steps), p.loss, p.lr,
                p.grad_norm, format_rate(p.tokens_per_second).c_str(), format_duration(p.eta_seconds).c_str());
  std::string line = text;
  if (p.mfu) {
    std::snprintf(text, sizeof text, " | MFU %.1f%%", 100.0 * *p.mfu);
    line += text;
  }
  if (p.memory_gib) {
    std::snprintf(text, sizeof text, " | mem %.1f GiB", *p.memory_gib);
    line += text;
  }
  if (p.skipped_steps > 0) line += " | skipped " + std::to_string(p.skipped_steps);
  return line;
}

}  // namespace flashtrain::trainer

#include "scan/scan_variant.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace flashrnn::scan_kernels {
namespace {

ScanVariant& variant_in_force() {
  static ScanVariant variant = [] {
    const char* text = std::getenv("FLASHRNN_SCAN_VARIANT");
    if (text == nullptr || *text == '\0') return ScanVariant{};
    bool ok = false;
    const ScanVariant v = parse_scan_variant(text, ok);
    if (!ok) {
      std::fprintf(stderr, "flashrnn scan: ignoring malformed FLASHRNN_SCAN_VARIANT='%s'\n", text);
      return ScanVariant{};
    }
    return v;
  }();
  return variant;
}

}  // namespace

ScanVariant scan_variant() { return variant_in_force(); }
void set_scan_variant(const ScanVariant& variant) { variant_in_force() = variant; }

ScanVariant parse_scan_variant(const std::string& text, bool& ok) {
  ScanVariant v;
  ok = true;
  std::istringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    if (part.empty()) continue;
    const size_t eq = part.find('=');
    const std::string key = part.substr(0, eq), value = eq == std::string::npos ? "" : part.substr(eq + 1);
    if (key == "bdt" && (value == "warp" || value == "tile")) {
      v.bdt_warp = value == "warp";
    } else if (key == "mode" && value == "auto") {
      v.bdt.mode = BdtMode::kAuto;
    } else if (key == "mode" && value == "march") {
      v.bdt.mode = BdtMode::kMarch;
    } else if (key == "mode" && value == "lookback") {
      v.bdt.mode = BdtMode::kLookback;
    } else if (key == "depth" && (value == "2" || value == "4")) {
      v.bdt.depth = std::atoi(value.c_str());
    } else if (key == "items" && (value == "8" || value == "16")) {
      v.bdt.item_iterations = std::atoi(value.c_str());
    } else if (key == "blocks_per_sm" && value.size() == 1 && value[0] >= '0' && value[0] <= '8') {
      v.bdt.blocks_per_sm = value[0] - '0';
    } else {
      ok = false;
    }
  }
  return v;
}

std::string describe_scan_variant(const ScanVariant& v) {
  const char* mode = v.bdt.mode == BdtMode::kAuto    ? "auto"
                     : v.bdt.mode == BdtMode::kMarch ? "march"
                                                     : "lookback";
  std::ostringstream s;
  s << "bdt=" << (v.bdt_warp ? "warp" : "tile") << ",mode=" << mode << ",depth=" << v.bdt.depth
    << ",items=" << v.bdt.item_iterations;
  if (v.bdt.blocks_per_sm > 0) s << ",blocks_per_sm=" << v.bdt.blocks_per_sm;
  return s.str();
}

}  // namespace flashrnn::scan_kernels

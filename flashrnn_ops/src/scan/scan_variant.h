// Which scan kernels run, chosen at run time for experiments (scanbench, the
// GPU job); the defaults are what the op uses. Process-wide, not thread-safe:
// set it before launching anything.
//
// The environment variable FLASHRNN_SCAN_VARIANT, read once, takes a comma-separated
// list of key=value (any subset, in any order):
//   bdt=warp|tile            [B, D, T]: the warp kernels (scan_bdt_*) or the tile kernels
//   mode=auto|march|lookback the warp kernels' way to spread rows (scan_bdt_plan.h);
//                            auto (the default): march for many rows, lookback for
//                            few rows of several items; march / lookback force one
//   depth=2|4                march: iterations in flight
//   items=8|16               lookback: iterations per item
//   blocks_per_sm=0..8       lookback: cap on resident blocks per SM (0: none)
// e.g. FLASHRNN_SCAN_VARIANT="mode=lookback,items=8".
#pragma once

#include <string>

#include "scan/warp/scan_bdt_plan.h"

namespace flashrnn::scan_kernels {

struct ScanVariant {
  bool bdt_warp = true;  // [B, D, T] on the warp kernels when T ≥ one iteration
  BdtChoice bdt;
};

// The variant in force: FLASHRNN_SCAN_VARIANT on first use, or the last set_scan_variant.
ScanVariant scan_variant();
void set_scan_variant(const ScanVariant& variant);
// Parses the FLASHRNN_SCAN_VARIANT syntax; unknown keys or values leave `ok` false.
ScanVariant parse_scan_variant(const std::string& text, bool& ok);
std::string describe_scan_variant(const ScanVariant& variant);

}  // namespace flashrnn::scan_kernels

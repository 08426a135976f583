#!/usr/bin/env bash
# Nsight Compute on the look-back forward kernel at 16 x 2^20 fp32 (one launch):
# memory throughput, warp stall reasons and the SASS lines with the most stall
# samples, into $OUT. On the GPU machine (carry build-scan-bin):
#   VARIANT="mode=lookback" bash experiments/scan/lookback_ncu.sh
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
B=build-scan-bin
source tests/gpu/torch_env.sh
OUT=${OUT:-/tmp/ncu-out}; mkdir -p "$OUT"
export FLASHRNN_SCAN_VARIANT=${VARIANT:-mode=lookback}
K=${KERNEL:-scan_bdt_forward_lookback}
timeout 200 ncu -k regex:$K --launch-skip 3 --launch-count 1 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SourceCounters \
  --page details $B/scanbench --no-vanilla --case "bdt fp32 (1,16" --out-dir /tmp/sb > "$OUT/ncu_details.txt" 2>&1
timeout 200 ncu -k regex:$K --launch-skip 3 --launch-count 1 --section SourceCounters --section WarpStateStats \
  --page source --print-source sass $B/scanbench --no-vanilla --case "bdt fp32 (1,16" --out-dir /tmp/sb > "$OUT/ncu_sass.txt" 2>&1
grep -E "Duration|DRAM Throughput|Memory Throughput|L2 Hit|Warp Cycles Per Issued|Stall|stall" "$OUT/ncu_details.txt" | head -40

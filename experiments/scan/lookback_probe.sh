#!/usr/bin/env bash
# The few-rows case (16 channels x 2^20 steps, fp32) under look-back variants:
# the CUDA tests that cover the look-back under the first variant, then
# scanbench's fw / fwbw for each. Binaries from build-scan-bin
# (experiments/scan/build_bin.sh); on the GPU machine (carry build-scan-bin):
#   bash experiments/scan/lookback_probe.sh ["variant" ...]
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
B=build-scan-bin
source tests/gpu/torch_env.sh
variants=("$@")
[[ ${#variants[@]} -gt 0 ]] || variants=("" "mode=lookback")
FLASHRNN_SCAN_VARIANT=${variants[-1]} timeout 60 $B/scan_tests \
  --gtest_filter='ScanCuda.SmallShapesEveryPath:ScanCuda.LongSequencesFewChannels:ScanCuda.MisalignedTensors:ScanCuda.ManyRows' \
  2>&1 | grep -E "^\[  (PASSED|FAILED)|Failure" | head -5
for v in "${variants[@]}"; do
  printf '%-52s ' "${v:-default}"
  FLASHRNN_SCAN_VARIANT=$v timeout 40 $B/scanbench --no-vanilla --case "bdt fp32 (1,16" --out-dir /tmp/sb 2>&1 |
    grep -E "^bdt" | head -1 | grep -oE "fw +[0-9.]+ ms|= +[0-9]+%|fwbw +[0-9.]+ ms|grid [0-9/]+" | tr '\n' ' '; echo
done

#!/usr/bin/env bash
# Kernel work on the GPU machine: build, run the fused tests, time the fused
# backend at the head sweep, and profile the 12×64 LSTM kernels with Nsight
# Compute (per-instruction SASS counts and stall samples) into $OUT.
#   [NCU=0] bash experiments/flashbench/fused_probe.sh [skip-tests]
set -o pipefail
B=build-gpu; mkdir -p "$OUT"
(cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DFLASHTRAIN_PYTHON="$(command -v python3)" > "$OUT/configure.log" 2>&1 &&
 cmake --build $B -j16 --target flashrnn_ops_tests flashbench > "$OUT/build.log" 2>&1) || { tail -30 "$OUT/build.log"; exit 1; }
T=$B/tests/flashrnn_ops/flashrnn_ops_tests
FB=$B/experiments/flashbench/flashbench
if [[ "${1:-}" != skip-tests ]]; then
  timeout 200 $T --gtest_filter='FusedCuda.*:*BackendsCudaTest*/fused' > "$OUT/tests.log" 2>&1; echo "tests rc=$?"
  grep -E "^\[  (PASSED|FAILED) |Failure|Expected|Which" "$OUT/tests.log" | head -30
fi
timeout 120 $FB --sweep heads --cells lstm,slstm --backends fused --baselines off --iters 10 --out "$OUT/bench.json" 2>&1 | grep -v skipped | tail -20
[[ "${NCU:-1}" == 0 ]] && exit 0
for k in forward backward; do
  timeout 150 ncu --kernel-name-base demangled -k regex:"tc_${k}_kernel<flashrnn::cells::Lstm, __nv_bfloat16, \\(int\\)64>" \
    --launch-skip 1 --launch-count 1 --section SourceCounters --section WarpStateStats --section InstructionStats \
    --page source --print-source sass $FB --sweep heads --cells lstm --backends fused --baselines off --iters 2 \
    --out /tmp/x.json > "$OUT/sass_$k.txt" 2>&1
  timeout 150 ncu --kernel-name-base demangled -k regex:"tc_${k}_kernel<flashrnn::cells::Lstm, __nv_bfloat16, \\(int\\)64>" \
    --launch-skip 1 --launch-count 1 --section WarpStateStats --section InstructionStats --section SchedulerStats \
    --metrics regex:smsp__pcsamp_warps_issue_stalled_.* $FB --sweep heads --cells lstm --backends fused --baselines off \
    --iters 2 --out /tmp/x.json > "$OUT/ncu_$k.txt" 2>&1
  echo "== $k"; grep -E "Executed Instructions  |Warp Cycles Per Issued|smsp__pcsamp_warps_issue_stalled_[a-z_]+ " "$OUT/ncu_$k.txt" | awk '$NF+0 > 0' | sort -k3 -n -r | head -12
done

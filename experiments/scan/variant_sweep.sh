#!/usr/bin/env bash
# On a GPU machine: for every variant built by build_variants.sh (VARIANTS_DIR,
# default build-scan-variants), run the scan tests and scanbench; then
# compute-sanitizer (memcheck, racecheck) on the small-shape test of each; then
# Nsight Compute on the first variant's main kernels. JSON per variant under
# $OUT/<name>/, the profile in $OUT/ncu.txt; the benchmark tables print last.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT="${OUT:-$PWD/scan-sweep-out}"
DIR="${VARIANTS_DIR:-build-scan-variants}"
source tests/gpu/torch_env.sh
mkdir -p "$OUT"
variants=$(ls "$DIR")
first=$(echo "$variants" | head -1)

for v in $variants; do
  timeout 200 "$DIR/$v/scan_tests" >"/tmp/tests_$v.log" 2>&1
  rc=$?
  echo "$v [$(cat "$DIR/$v/knobs.txt")] tests rc=$rc $(grep -E '^\[  (PASSED|FAILED) ' "/tmp/tests_$v.log" | tr '\n' ' ')"
  grep -E "Failure|^\[  FAILED  \] Scan" "/tmp/tests_$v.log" | head -5
  mkdir -p "$OUT/$v"
  timeout 150 "$DIR/$v/scanbench" --out-dir "$OUT/$v" >"/tmp/bench_$v.log" 2>&1
  echo "$v bench rc=$?"
done

for tool in memcheck racecheck; do
  for v in $variants; do
    timeout 100 compute-sanitizer --tool "$tool" --error-exitcode 9 "$DIR/$v/scan_tests" \
      --gtest_filter='ScanCuda.SmallShapesEveryPath' >/tmp/sanitizer.log 2>&1
    echo "$tool $v rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/sanitizer.log | tail -1)"
  done
done

sections="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats"
sections+=" --section MemoryWorkloadAnalysis"
{
  for spec in "scan_forward_kernel|bdt bf16 (8" "scan_forward_kernel|btd fp32 (8" \
              "scan_backward_kernel|bdt fp32 (8,1536,4096)"; do
    kernel="${spec%%|*}"; case_name="${spec#*|}"
    echo "=== $first: $kernel, case '$case_name'"
    timeout 120 ncu --clock-control none --kernel-name "regex:$kernel" --launch-skip 2 \
      --launch-count 1 $sections "$DIR/$first/scanbench" --case "$case_name" --no-vanilla \
      --out-dir /tmp 2>&1 | grep -v "^==PROF==\|^bdt\|^btd\|^device\|^kernels\|^wrote\|^summary"
  done
} >"$OUT/ncu.txt" 2>&1
grep -E "^===|Duration|DRAM Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Memory Throughput" "$OUT/ncu.txt" | head -40

for v in $variants; do
  echo "== $v [$(cat "$DIR/$v/knobs.txt")]"
  sed -n '/^summary/,$p' "/tmp/bench_$v.log" | tail -n +2
done

#!/usr/bin/env bash
# The scan op's GPU job in one call (about 6 minutes on an H200): binaries, the
# scan tests under each kernel variant, compute-sanitizer, then scanbench per
# variant (each run measures the copy bandwidth itself). Logs and JSON under
# $OUT (default ./scan-gpu-out); a compact table of all variants prints last.
#
#   bash experiments/scan/gpu_job.sh
#
# Binaries: scan_tests and scanbench prebuilt for sm_90a against the same torch
# in $SCAN_BIN_DIR (default build-scan-bin; experiments/scan/build_bin.sh makes
# them) are used if they start; otherwise the scan-only tree (standalone/) is
# configured with this machine's python3 and built here.
#
# Variants (FLASHRNN_SCAN_VARIANT, flashrnn_ops/src/scan/scan_variant.h) to
# test and time: SCAN_VARIANTS, space-separated, "default" for none.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROOT="$PWD"
OUT="${OUT:-$ROOT/scan-gpu-out}"
mkdir -p "$OUT"
T0=$(date +%s)
elapsed() { echo $(($(date +%s) - T0)); }
step() { printf '\n== [%3ss] %s\n' "$(elapsed)" "$*"; }
VARIANTS=${SCAN_VARIANTS:-"default depth=2 mode=lookback mode=lookback,items=2 bdt=tile"}
BUDGET=${SCAN_JOB_BUDGET_S:-300}  # no new benchmark variant starts after this many seconds

PY="${FLASHTRAIN_PYTHON:-$(command -v python3)}"
TORCH_LIB="$("$PY" -c 'import torch, os; print(os.path.dirname(torch.__file__))')/lib"
export LD_LIBRARY_PATH="$TORCH_LIB:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw,utilization.gpu \
  --format=csv >"$OUT/gpu_state.txt" 2>&1
cat "$OUT/gpu_state.txt"

BIN="${SCAN_BIN_DIR:-build-scan-bin}"
if [ -x "$BIN/scan_tests" ] && [ -x "$BIN/scanbench" ] &&
  "$BIN/scan_tests" --gtest_list_tests >/dev/null 2>&1 &&
  ! ldd "$BIN/scanbench" 2>/dev/null | grep -q "not found"; then
  step "prebuilt binaries from $BIN ($(cat "$BIN/commit.txt" 2>/dev/null))"
else
  step "configure and build the scan-only tree (sm_90a)"
  BUILD="${SCAN_BUILD_DIR:-build-gpu-scan}"
  cmake -S experiments/scan/standalone -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DFLASHTRAIN_PYTHON="$PY" -DTORCH_CUDA_ARCH_LIST=9.0a >"$OUT/configure.log" 2>&1 ||
    { tail -30 "$OUT/configure.log"; exit 1; }
  cmake --build "$BUILD" -j"$(nproc)" --target scan_tests scanbench >"$OUT/build.log" 2>&1 ||
    { grep -E "error|Error" "$OUT/build.log" | head -40; exit 1; }
  BIN="$OUT/bin"
  mkdir -p "$BIN"
  cp "$BUILD/tests/scan/scan_tests" "$BUILD/experiments/scan/scanbench" "$BIN/"
  step "built"
fi

variant_env() { [ "$1" = default ] && echo "" || echo "$1"; }
slug() { echo "$1" | tr '=,' '-_'; }
FILTER='ScanCuda.SmallShapesEveryPath:ScanCuda.MisalignedTensors:ScanCuda.LongSequencesFewChannels:ScanCuda.ManyRows'
sanitize() {  # tool variant
  local log="$OUT/sanitizer_$1_$(slug "$2").log"
  FLASHRNN_SCAN_VARIANT="$(variant_env "$2")" timeout 100 compute-sanitizer --tool "$1" \
    --error-exitcode 9 "$BIN/scan_tests" --gtest_filter='ScanCuda.SmallShapesEveryPath' >"$log" 2>&1
  local rc=$?
  echo "[$(elapsed)s] $1 $2: rc=$rc $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1)"
}

# Tests: the whole suite (CPU and CUDA) under the default variant; under the
# others, the CUDA tests whose paths they change.
step "tests"
FLASHRNN_SCAN_VARIANT="" timeout 150 "$BIN/scan_tests" >"$OUT/tests_default.log" 2>&1
rc=$?
echo "[$(elapsed)s] default: rc=$rc $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/tests_default.log" | tr '\n' ' ')"
grep -E "Failure|^\[  FAILED  \]|Expected|Which is" "$OUT/tests_default.log" | head -12
for v in ${SCAN_TEST_VARIANTS:-mode=march mode=march,depth=2 mode=lookback,items=2 bdt=tile}; do
  filter=$FILTER
  [ "$v" = bdt=tile ] && filter='ScanCuda.SmallShapesEveryPath:ScanCuda.ManyRows'
  log="$OUT/tests_$(slug "$v").log"
  FLASHRNN_SCAN_VARIANT="$v" timeout 60 "$BIN/scan_tests" --gtest_filter="$filter" >"$log" 2>&1
  rc=$?
  echo "[$(elapsed)s] $v: rc=$rc $(grep -E '^\[  (PASSED|FAILED) ' "$log" | tr '\n' ' ')"
  grep -E "Failure|^\[  FAILED  \]|Expected|Which is" "$log" | head -8
done

step "compute-sanitizer memcheck (default variant, small shapes)"
sanitize memcheck default

step "scanbench per variant"
jsons=()
for v in $VARIANTS; do
  if [ "$(elapsed)" -gt "$BUDGET" ]; then
    echo "skipping $v: past the ${BUDGET}s budget"
    continue
  fi
  dir="$OUT/bench_$(slug "$v")"
  mkdir -p "$dir"
  flags=(--out-dir "$dir")
  [ "$v" = default ] || flags+=(--no-vanilla)
  FLASHRNN_SCAN_VARIANT="$(variant_env "$v")" timeout 90 "$BIN/scanbench" "${flags[@]}" \
    >"$dir/bench.log" 2>&1
  rc=$?
  echo "[$(elapsed)s] $v: rc=$rc"
  [ $rc -ne 0 ] && tail -5 "$dir/bench.log"
  for f in "$dir"/scan_*.json; do [ -f "$f" ] && jsons+=("$f"); done
done

step "more compute-sanitizer, as time allows"
for spec in "memcheck mode=march" "racecheck default"; do
  if [ "$(elapsed)" -gt "${SANITIZER_BUDGET_S:-380}" ]; then
    echo "skipping $spec: past the budget"
    continue
  fi
  sanitize $spec
done

step "Nsight Compute on two default-variant kernels, as time allows"
if [ "$(elapsed)" -lt "${NCU_BUDGET_S:-400}" ] && command -v ncu >/dev/null; then
  for spec in "scan_bdt_forward|bdt bf16 (8" "scan_bdt_forward|bdt fp32 (1,16"; do
    kernel="${spec%%|*}"; case_name="${spec#*|}"
    echo "=== $kernel, case '$case_name'"
    timeout 50 ncu --clock-control none --kernel-name "regex:$kernel" --launch-skip 2 \
      --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis \
      --section Occupancy --section WarpStateStats \
      "$BIN/scanbench" --case "$case_name" --no-vanilla --out-dir /tmp 2>&1 |
      grep -v "^==PROF==\|^bdt\|^btd\|^device\|^kernels\|^wrote\|^summary"
  done >"$OUT/ncu.txt" 2>&1
  grep -E "^===|Duration|DRAM Throughput|L2 Cache Throughput|Memory Throughput|Achieved Occupancy|Registers Per" \
    "$OUT/ncu.txt" | head -30
else
  echo "skipped"
fi

step "done in $(elapsed)s; default variant's table:"
sed -n '/^summary/,$p' "$OUT/bench_default/bench.log" 2>/dev/null | cut -c1-220
echo
"$PY" experiments/scan/summarize.py "${jsons[@]}"

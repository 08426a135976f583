#!/usr/bin/env bash
# The scan op's GPU job in one call (about 3-4 minutes on an H200): the whole
# scan test suite on the default kernels, each CUDA test under its own 60 s
# timeout (a hang costs one test, not the job); compute-sanitizer memcheck and
# racecheck on the default; then scanbench for the default and for the v3
# baseline (FLASHRNN_SCAN_VARIANT=bdt=tile, [B, D, T] cases only). Logs and
# JSON under $OUT (default ./scan-gpu-out); the table prints last.
#
#   bash experiments/scan/gpu_job.sh
#
# Binaries: scan_tests and scanbench prebuilt for sm_90a against the same torch
# in $SCAN_BIN_DIR (default build-scan-bin; experiments/scan/build_bin.sh makes
# them) are used if they start; otherwise the scan-only build
# (FLASHTRAIN_SCAN_ONLY) is configured with this machine's python3 and built
# here (several minutes more).
#
# More variants (FLASHRNN_SCAN_VARIANT syntax): SCAN_EXTRA_VARIANTS="mode=lookback,items=8 ..."
# (the look-back tests under a 60 s timeout each, then scanbench's [B, D, T] cases).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROOT="$PWD"
OUT="${OUT:-$ROOT/scan-gpu-out}"
mkdir -p "$OUT"
T0=$(date +%s)
elapsed() { echo $(($(date +%s) - T0)); }
step() { printf '\n== [%3ss] %s\n' "$(elapsed)" "$*"; }
TEST_TIMEOUT=${SCAN_TEST_TIMEOUT_S:-60}

PY="${FLASHTRAIN_PYTHON:-$(command -v python3)}"
FLASHTRAIN_PYTHON="$PY" source tests/gpu/torch_env.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw,utilization.gpu \
  --format=csv >"$OUT/gpu_state.txt" 2>&1
cat "$OUT/gpu_state.txt"

BIN="${SCAN_BIN_DIR:-build-scan-bin}"
if [ -x "$BIN/scan_tests" ] && [ -x "$BIN/scanbench" ] &&
  "$BIN/scan_tests" --gtest_list_tests >/dev/null 2>&1 &&
  ! ldd "$BIN/scanbench" 2>/dev/null | grep -q "not found"; then
  step "prebuilt binaries from $BIN ($(tr '\n' ' ' <"$BIN/commit.txt" 2>/dev/null))"
else
  step "configure and build the scan op alone (sm_90a)"
  BUILD="${SCAN_BUILD_DIR:-build-gpu-scan}"
  cmake -S . -DFLASHTRAIN_SCAN_ONLY=ON -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DFLASHTRAIN_PYTHON="$PY" -DTORCH_CUDA_ARCH_LIST=9.0a >"$OUT/configure.log" 2>&1 ||
    { tail -30 "$OUT/configure.log"; exit 1; }
  cmake --build "$BUILD" -j"$(nproc)" --target scan_tests scanbench >"$OUT/build.log" 2>&1 ||
    { grep -E "error|Error" "$OUT/build.log" | head -40; exit 1; }
  BIN="$OUT/bin"
  mkdir -p "$BIN"
  cp "$BUILD/tests/scan/scan_tests" "$BUILD/experiments/scan/scanbench" "$BIN/"
  step "built"
fi

slug() { echo "$1" | tr '=,' '-_'; }
# All test names of the binary, "Suite.Name" per line.
list_tests() {
  "$BIN/scan_tests" --gtest_list_tests | awk '/^[^ ]/ {s=$1} /^  / {print s $1}'
}

# run_tests VARIANT FILTER_REGEX (VARIANT "" = default): the CPU suites in one process, each CUDA test in
# its own process, every process under TEST_TIMEOUT. Logs in $OUT/tests_<v>/.
run_tests() {
  local v="$1" dir="$OUT/tests_$(slug "${1:-default}")" pass=0 fail=0 hung=0 skipped=0 names cpu t rc
  mkdir -p "$dir"
  names=$(list_tests | grep -E "$2")
  cpu=$(echo "$names" | grep -v '^ScanCuda\.' | paste -sd:)
  if [ -n "$cpu" ]; then
    FLASHRNN_SCAN_VARIANT="$v" timeout "$TEST_TIMEOUT" "$BIN/scan_tests" --gtest_filter="$cpu" \
      >"$dir/cpu.log" 2>&1
    rc=$?
    echo "  cpu suites ($(echo "$cpu" | tr ':' '\n' | wc -l) tests): rc=$rc $(grep -E '^\[  (PASSED|FAILED) ' "$dir/cpu.log" | tr '\n' ' ')"
    [ $rc -eq 0 ] || grep -E "^\[  FAILED  \]|Failure" "$dir/cpu.log" | head -6
  fi
  for t in $(echo "$names" | grep '^ScanCuda\.'); do
    FLASHRNN_SCAN_VARIANT="$v" timeout "$TEST_TIMEOUT" "$BIN/scan_tests" --gtest_filter="$t" \
      >"$dir/$t.log" 2>&1
    rc=$?
    local ms
    ms=$(grep -oE "^\[       OK \] .*\(([0-9]+) ms\)" "$dir/$t.log" | grep -oE "[0-9]+ ms" | tail -1)
    if [ $rc -eq 0 ] && grep -q '^\[  SKIPPED \]' "$dir/$t.log"; then
      skipped=$((skipped + 1))
      echo "  $t: SKIPPED"
    elif [ $rc -eq 0 ]; then
      pass=$((pass + 1))
      echo "  $t: ok ($ms)"
    elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
      hung=$((hung + 1))
      echo "  $t: TIMEOUT after ${TEST_TIMEOUT}s (hang?)"
    else
      fail=$((fail + 1))
      echo "  $t: FAILED rc=$rc"
      grep -E "Failure|Expected|trace:|test_scan_cuda.cpp:64" "$dir/$t.log" | head -6
    fi
  done
  echo "[$(elapsed)s] tests ${v:-default}: CUDA tests $pass passed, $fail failed, $hung timed out, $skipped skipped"
}

sanitize() {  # tool
  local log="$OUT/sanitizer_$1_default.log"
  FLASHRNN_SCAN_VARIANT="" timeout 90 compute-sanitizer --tool "$1" \
    --error-exitcode 9 "$BIN/scan_tests" --gtest_filter='ScanCuda.SmallShapesEveryPath' >"$log" 2>&1
  local rc=$?
  echo "[$(elapsed)s] $1 default: rc=$rc $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1)"
}

step "tests: the whole scan suite on the default kernels"
run_tests "" '.'
for v in ${SCAN_EXTRA_VARIANTS:-}; do
  step "tests: CUDA tests under $v"
  run_tests "$v" '^ScanCuda\.(SmallShapesEveryPath|MisalignedTensors|LongSequencesFewChannels|ManyRows)$'
done

step "compute-sanitizer on the default kernels (small shapes, every path)"
sanitize memcheck
sanitize racecheck

# bench NAME VARIANT TIMEOUT FLAGS...: scanbench into $OUT/bench_NAME.
jsons=()
bench() {
  local name="$1" v="$2" limit="$3"
  shift 3
  local dir="$OUT/bench_$name"
  mkdir -p "$dir"
  FLASHRNN_SCAN_VARIANT="$v" timeout "$limit" "$BIN/scanbench" --out-dir "$dir" "$@" \
    >"$dir/bench.log" 2>&1
  local rc=$?
  echo "[$(elapsed)s] scanbench $name ($v): rc=$rc"
  [ $rc -ne 0 ] && tail -5 "$dir/bench.log"
  for f in "$dir"/scan_*.json; do [ -f "$f" ] && jsons+=("$f"); done
}
step "scanbench: default (vs vanilla) and the v3 tile kernels (bdt cases)"
bench default "" 150
bench v3-tile "bdt=tile" 90 --no-vanilla --case bdt
for v in ${SCAN_EXTRA_VARIANTS:-}; do bench "$(slug "$v")" "$v" 90 --no-vanilla --case bdt; done

# The JSONs at the top of $OUT too, named like experiments/results/scan_<device>.json.
for f in "$OUT"/bench_default/scan_*.json; do [ -f "$f" ] && cp "$f" "$OUT/"; done
for f in "$OUT"/bench_v3-tile/scan_*.json; do
  [ -f "$f" ] && cp "$f" "$OUT/$(basename "$f" .json)_v3_tile.json"
done
step "done in $(elapsed)s; JSON: $(cd "$OUT" && ls scan_*.json 2>/dev/null | tr '\n' ' ')"
sed -n '/^summary/,$p' "$OUT/bench_default/bench.log" 2>/dev/null | cut -c1-220
echo
"$PY" experiments/scan/summarize.py "${jsons[@]}"

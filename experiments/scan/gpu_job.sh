#!/usr/bin/env bash
# The scan op's GPU job, in one go: build the scan-only tree (standalone/), run
# the scan tests, scanbench, then compute-sanitizer (memcheck, racecheck) on the
# small-shape test. Logs and the JSON go to $OUT (default ./scan-gpu-out); the
# benchmark's table is printed last.
#
#   bash experiments/scan/gpu_job.sh [extra scanbench flags]
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT="${OUT:-$PWD/scan-gpu-out}"
BUILD="${SCAN_BUILD_DIR:-build-gpu-scan}"
mkdir -p "$OUT"
step() { printf '\n== %s\n' "$*"; }

# SCAN_BIN_DIR may hold scan_tests and scanbench built elsewhere for sm_90a
# against the same torch; they are used if they start, else the tree is built.
TESTS="$BUILD/tests/scan/scan_tests"
BENCH="$BUILD/experiments/scan/scanbench"
TORCH_LIB="$("${FLASHTRAIN_PYTHON:-python3}" -c 'import torch, os; print(os.path.dirname(torch.__file__))')/lib"
export LD_LIBRARY_PATH="$TORCH_LIB:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
if [ -n "${SCAN_BIN_DIR:-}" ] && "$SCAN_BIN_DIR/scan_tests" --gtest_list_tests >/dev/null 2>&1; then
  step "using prebuilt binaries from $SCAN_BIN_DIR"
  TESTS="$SCAN_BIN_DIR/scan_tests"
  BENCH="$SCAN_BIN_DIR/scanbench"
else
  step "configure and build (sm_90a only)"
  cmake -S experiments/scan/standalone -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DFLASHTRAIN_PYTHON="${FLASHTRAIN_PYTHON:-python3}" -DTORCH_CUDA_ARCH_LIST=9.0a \
    >"$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
  cmake --build "$BUILD" -j"$(nproc)" --target scan_tests scanbench >"$OUT/build.log" 2>&1 \
    || { grep -E "error|Error" "$OUT/build.log" | head -40; exit 1; }
fi
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv \
  >"$OUT/gpu_state.txt" 2>&1

step "scan tests"
timeout 300 "$TESTS" >"$OUT/tests.log" 2>&1
tests_rc=$?
grep -E "^\[  (FAILED|PASSED|SKIPPED) |Failure|error" "$OUT/tests.log" | head -40

step "scanbench"
timeout 240 "$BENCH" --out-dir "$OUT" "$@" >"$OUT/bench.log" 2>&1
bench_rc=$?
[ $bench_rc -ne 0 ] && tail -20 "$OUT/bench.log"

step "compute-sanitizer on small shapes"
for tool in memcheck racecheck; do
  timeout 120 compute-sanitizer --tool "$tool" --error-exitcode 9 "$TESTS" \
    --gtest_filter='ScanCuda.SmallShapesEveryPath' >"$OUT/sanitizer_$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer_$tool.log" | tail -1)"
done

sed -n '/^summary/,$p' "$OUT/bench.log"
echo "tests rc=$tests_rc bench rc=$bench_rc"

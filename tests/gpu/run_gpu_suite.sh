#!/usr/bin/env bash
# The GPU suite, on a GPU machine (no apt, no network): configure against the
# machine's own python3 torch, build, run every test (the GPU tests run for
# real there), then compute-sanitizer memcheck and racecheck on small cases.
#
#   bash tests/gpu/run_gpu_suite.sh [ninja targets...]    # default: all
# Logs go to $OUT (when set, the folder whose files come back from the GPU machine) or build-gpu/logs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
BUILD="${BUILD:-build-gpu}"
LOGS="${OUT:-$BUILD/logs}"
mkdir -p "$LOGS"

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$LOGS/device.txt"
if [[ ! -f "$BUILD/build.ninja" ]]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DFLASHTRAIN_PYTHON="$(command -v python3)" > "$LOGS/configure.log" 2>&1 ||
    { tail -40 "$LOGS/configure.log"; exit 1; }
fi
start=$(date +%s)
cmake --build "$BUILD" -j "$(nproc)" -- "$@" > "$LOGS/build.log" 2>&1 || { tail -40 "$LOGS/build.log"; exit 1; }
echo "build: $(( $(date +%s) - start )) s"

set +e
ctest --test-dir "$BUILD" --output-on-failure -j 4 > "$LOGS/ctest.log" 2>&1
ctest_rc=$?
tail -5 "$LOGS/ctest.log"

sanitize() {  # tool, filter
  compute-sanitizer --tool "$1" --error-exitcode 1 \
    "$BUILD/tests/flashrnn_ops/flashrnn_ops_tests" --gtest_filter="$2" > "$LOGS/sanitizer_$1.log" 2>&1
  local rc=$?
  echo "compute-sanitizer $1: rc=$rc ($(grep -c 'ERROR SUMMARY: 0 errors' "$LOGS/sanitizer_$1.log") clean summaries)"
  return $rc
}
sanitize memcheck '*VanillaCuda*:*AlternatingCuda.Repeated*:*RunsUnderCudaGraphCapture*'; mem_rc=$?
sanitize racecheck '*VanillaCuda*/lstm:*AlternatingCuda.Repeated*:*RunsUnderCudaGraphCapture*'; race_rc=$?
set -e

printf '\n%-24s %s\n' "ctest" "$([[ $ctest_rc == 0 ]] && echo pass || echo FAIL)"
printf '%-24s %s\n' "memcheck" "$([[ $mem_rc == 0 ]] && echo pass || echo FAIL)"
printf '%-24s %s\n' "racecheck" "$([[ $race_rc == 0 ]] && echo pass || echo FAIL)"
exit $(( ctest_rc || mem_rc || race_rc ))

#!/usr/bin/env bash
# Builds scan_tests and scanbench once per set of tile knobs (scan/tile/scan_tiling.h) into
# build-scan-variants/<name>/, for variant_sweep.sh on a GPU machine. Each
# variant is its own build tree (only the CUDA sources differ, so ccache serves
# the rest); the knobs go to the CUDA compiler only, where the kernels and the
# host-side tiling live.
#
#   bash experiments/scan/build_variants.sh "A 8 16 4 768 512" "B 8 8 4 1024 768" ...
#   (name, warps per tile, [B,D,T] steps, [B,T,D] steps, forward and backward
#    threads per SM the registers must allow)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
PY="${FLASHTRAIN_PYTHON:-$PWD/.venv/bin/python}"
for spec in "$@"; do
  read -r name warps bdt btd fw bw <<<"$spec"
  flags="-DFLASHRNN_SCAN_WARPS=$warps -DFLASHRNN_SCAN_BDT_STEPS=$bdt -DFLASHRNN_SCAN_BTD_STEPS=$btd"
  flags+=" -DFLASHRNN_SCAN_FW_THREADS_PER_SM=$fw -DFLASHRNN_SCAN_BW_THREADS_PER_SM=$bw"
  cmake -S . -DFLASHTRAIN_SCAN_ONLY=ON -B "build-scan-$name" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DFLASHTRAIN_PYTHON="$PY" -DTORCH_CUDA_ARCH_LIST=9.0a "-DCMAKE_CUDA_FLAGS=$flags" >/dev/null
  cmake --build "build-scan-$name" --target scan_tests scanbench
  mkdir -p "build-scan-variants/$name"
  cp "build-scan-$name/tests/scan/scan_tests" "build-scan-$name/experiments/scan/scanbench" \
    "build-scan-variants/$name/"
  echo "$spec" >"build-scan-variants/$name/knobs.txt"
done

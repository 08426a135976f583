#!/usr/bin/env bash
# Builds scan_tests and scanbench for sm_90a in the scan-only build (FLASHTRAIN_SCAN_ONLY)
# and copies them to build-scan-bin/ (git-ignored), for gpu_job.sh on a GPU
# machine with the same torch (carry build-scan-bin). Uses ccache when present.
#
#   bash experiments/scan/build_bin.sh [jobs]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
PY="${FLASHTRAIN_PYTHON:-$PWD/.venv/bin/python}"
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -DFLASHTRAIN_SCAN_ONLY=ON -B build-scan-sm90 -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DFLASHTRAIN_PYTHON="$PY" -DTORCH_CUDA_ARCH_LIST=9.0a "${launcher[@]}" >/dev/null
cmake --build build-scan-sm90 -j"${1:-2}" --target scan_tests scanbench
mkdir -p build-scan-bin
cp build-scan-sm90/tests/scan/scan_tests build-scan-sm90/experiments/scan/scanbench build-scan-bin/
git rev-parse --short HEAD >build-scan-bin/commit.txt
git diff --quiet HEAD -- flashrnn_ops experiments tests || echo "+ uncommitted changes" >>build-scan-bin/commit.txt
ls -la build-scan-bin

#!/usr/bin/env bash
# Builds flashbench against the GPU machine's python3 torch and runs the paper's
# sweeps; the JSON lands in $OUT (when set) or experiments/results/.
#   bash experiments/flashbench/run_on_gpu.sh [flashbench options...]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
BUILD="${BUILD:-build-gpu}"
DEST="${OUT:-experiments/results}"
if [[ ! -f "$BUILD/build.ninja" ]]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DFLASHTRAIN_PYTHON="$(command -v python3)" > "$DEST/flashbench_configure.log" 2>&1
fi
cmake --build "$BUILD" -j "$(nproc)" --target flashbench > "$DEST/flashbench_build.log" 2>&1
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '_' | tr -cd '[:alnum:]_')
"$BUILD/experiments/flashbench/flashbench" --sweep all --cells lstm,slstm,gru,elman \
  --out "$DEST/flashbench_${device}.json" "$@" | tee "$DEST/flashbench_${device}.txt"

#!/usr/bin/env bash
# On a GPU machine: unpack the executables that scripts/pack_gpu_binaries.sh
# put in build-bin/ into $BIN_DIR (default /tmp/flashtrain-bin), point them at
# this machine's torch libraries, and run one of them with the given arguments.
#
#   bash tests/gpu/run_prebuilt.sh flashrnn_ops_tests --gtest_filter='FusedCuda.*'
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
BIN_DIR="${BIN_DIR:-/tmp/flashtrain-bin}"
name="$1"; shift
mkdir -p "$BIN_DIR"
if [[ ! -x "$BIN_DIR/$name" || build-bin/$name.gz -nt "$BIN_DIR/$name" ]]; then
  [[ -f build-bin/$name.gz ]] || { echo "build-bin/$name.gz missing: run scripts/pack_gpu_binaries.sh and carry build-bin" >&2; exit 2; }
  # Unpacked under a private name and renamed, so runs started together do not
  # execute a half-written file.
  gzip -dc "build-bin/$name.gz" > "$BIN_DIR/$name.$$" && chmod +x "$BIN_DIR/$name.$$" &&
    mv -f "$BIN_DIR/$name.$$" "$BIN_DIR/$name"
fi
source tests/gpu/torch_env.sh
exec "$BIN_DIR/$name" "$@"

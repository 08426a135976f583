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
packed=build-bin/$name.xz
if [[ ! -x "$BIN_DIR/$name" || $packed -nt "$BIN_DIR/$name" ]]; then
  [[ -f $packed ]] || { echo "build-bin/$name.xz missing: run scripts/pack_gpu_binaries.sh and carry build-bin" >&2; exit 2; }
  # Unpacked under a private name and renamed, so runs started together do not
  # execute a half-written file. Python's lzma where the machine has no xz.
  if command -v xz >/dev/null; then xz -dc "$packed" > "$BIN_DIR/$name.$$"
  else python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$packed" > "$BIN_DIR/$name.$$"
  fi && chmod +x "$BIN_DIR/$name.$$" && mv -f "$BIN_DIR/$name.$$" "$BIN_DIR/$name"
fi
source tests/gpu/torch_env.sh
exec "$BIN_DIR/$name" "$@"

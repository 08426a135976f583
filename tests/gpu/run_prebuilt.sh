#!/usr/bin/env bash
# On a GPU machine: unpack the executables that scripts/pack_gpu_binaries.sh
# put in build-bin/ into $BIN_DIR (default /tmp/flashtrain-bin), with the
# kernels' shared library beside them (where they look for it first), point
# them at this machine's torch libraries, and run one of them with the given
# arguments. A name with a folder (old/flashbench) runs the build packed into
# build-bin/old/ (PACK_DIR=build-bin/old scripts/pack_gpu_binaries.sh), with
# that build's library: two builds side by side for an A/B.
#
#   bash tests/gpu/run_prebuilt.sh flashrnn_ops_tests --gtest_filter='FusedCuda.*'
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
BIN_DIR="${BIN_DIR:-/tmp/flashtrain-bin}"
name="$1"; shift

# build-bin/$1.xz -> $BIN_DIR/$1 unless that was unpacked from the same file
# (its copy, $BIN_DIR/$1.xz; a pack swapped in may be older than the last one).
unpack() {
  local packed=build-bin/$1.xz target=$BIN_DIR/$1
  [[ -f $packed ]] || { echo "$packed missing: run scripts/pack_gpu_binaries.sh and carry build-bin" >&2; exit 2; }
  [[ -x "$target" ]] && cmp -s "$packed" "$target.xz" && return 0
  mkdir -p "$(dirname "$target")"
  # Unpacked under a private name and renamed, so runs started together do not
  # execute a half-written file. Python's lzma where the machine has no xz.
  if command -v xz >/dev/null; then xz -dc "$packed" > "$target.$$"
  else python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$packed" > "$target.$$"
  fi && chmod +x "$target.$$" && mv -f "$target.$$" "$target" && cp "$packed" "$target.xz"
}

unpack "$name"
folder=$(dirname "$name"); [[ $folder == . ]] && folder="" || folder="$folder/"
[[ -f build-bin/${folder}libflashrnn_ops.so.xz ]] && unpack "${folder}libflashrnn_ops.so"
source tests/gpu/torch_env.sh
exec "$BIN_DIR/$name" "$@"

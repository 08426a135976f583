#!/usr/bin/env bash
# On a GPU machine: the Python package's tests (python/tests: the CPU ones and
# test_gpu.py) against the prebuilt extension that
# `scripts/pack_gpu_binaries.sh flashtrain_torch` put in build-bin/ (carry
# build-bin), with this machine's python3 and torch. test_checkpoint.py also
# needs the prebuilt flashtrain (pack it too; it skips without it).
#
#   bash tests/gpu/run_python_tests.sh [unittest options, e.g. -k Gpu]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
BIN_DIR="${BIN_DIR:-/tmp/flashtrain-bin}"
mkdir -p "$BIN_DIR/python"
[[ -f build-bin/flashtrain_torch.xz ]] ||
  { echo "build-bin/flashtrain_torch.xz missing: scripts/pack_gpu_binaries.sh flashtrain_torch" >&2; exit 2; }
unpack_xz() { python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$@"; }
unpack_xz build-bin/flashtrain_torch.xz "$BIN_DIR/python/_C.so"
# The kernels' library beside the extension (where it looks first) and where a
# build tree has it (the wheel test reads $FLASHTRAIN_BUILD_DIR like one).
[[ -f build-bin/libflashrnn_ops.so.xz ]] ||
  { echo "build-bin/libflashrnn_ops.so.xz missing: scripts/pack_gpu_binaries.sh flashtrain_torch" >&2; exit 2; }
unpack_xz build-bin/libflashrnn_ops.so.xz "$BIN_DIR/python/libflashrnn_ops.so"
mkdir -p "$BIN_DIR/flashrnn_ops" && ln -sf "$BIN_DIR/python/libflashrnn_ops.so" "$BIN_DIR/flashrnn_ops/"
if [[ -f build-bin/flashtrain.xz ]]; then
  bash tests/gpu/run_prebuilt.sh flashtrain --help > /dev/null  # unpacks it into $BIN_DIR
  mkdir -p "$BIN_DIR/trainer" && ln -sf "$BIN_DIR/flashtrain" "$BIN_DIR/trainer/flashtrain"
fi
source tests/gpu/torch_env.sh
PYTHONPATH=python FLASHTRAIN_LIBRARY="$BIN_DIR/python/_C.so" FLASHTRAIN_SOURCE_DIR="$PWD" \
  FLASHTRAIN_BUILD_DIR="$BIN_DIR" python3 -m unittest discover -s python/tests -t python -p 'test_*.py' -v "$@"

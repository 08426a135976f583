#!/usr/bin/env bash
# Builds what changed and runs every test (CPU tests always; GPU tests run where
# a GPU is present and skip cleanly elsewhere). Run scripts/setup.sh once first.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BUILD="${FLASHTRAIN_BUILD_DIR:-build}"
if [[ ! -f "$BUILD/build.ninja" ]]; then
  echo "test.sh: no build in $BUILD/; run 'bash scripts/setup.sh' first" >&2
  exit 2
fi
export CCACHE_DIR="${CCACHE_DIR:-$ROOT/.ccache}" CCACHE_BASEDIR="$ROOT"
export CCACHE_SLOPPINESS="pch_defines,time_macros,include_file_mtime,include_file_ctime"
cmake --build "$BUILD"
ctest --test-dir "$BUILD" --output-on-failure -j "$(nproc)" "$@"

#!/usr/bin/env bash
# Builds test and benchmark executables here (the local build/ tree, the same
# sources and flags as CI) and packs them xz-compressed into build-bin/ (git-ignored;
# xz -6; the kernels are one shared library, libflashrnn_ops.so.xz, packed once beside them),
# so that a GPU machine runs them without building: carry build-bin, then
# `bash tests/gpu/run_prebuilt.sh ...` there. The machine there must have the
# same torch wheel (its libraries are found through its python3).
#
#   bash scripts/pack_gpu_binaries.sh [target ...]
#   default targets: flashrnn_ops_tests flashbench models_tests; flashtrain_torch packs
#   the Python extension (tests/gpu/run_python_tests.sh runs the package's tests)
# KERNELS_BUILD=DIR packs the kernels' library from another build tree of the
# same sources, e.g. one configured with -DTORCH_CUDA_ARCH_LIST=9.0a (H100/H200
# only: about half the size, leaving room to carry a corpus beside it).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(flashrnn_ops_tests flashbench models_tests)
cmake --build build -j"$(nproc)" --target "${targets[@]}"
# PACK_DIR=build-bin/old (after the default pack, which empties build-bin) keeps
# a second build beside the first: run_prebuilt.sh old/flashbench runs it.
PACK_DIR="${PACK_DIR:-build-bin}"
rm -rf "$PACK_DIR" && mkdir -p "$PACK_DIR"
needs_kernels=0
for t in "${targets[@]}"; do
  # The Python extension's file is build/python/_C.so (python/CMakeLists.txt).
  if [[ $t == flashtrain_torch ]]; then file=build/python/_C.so
  else file=$(find build -type f -executable -name "$t" -not -path '*/CMakeFiles/*' | head -1)
  fi
  [[ -n "$file" && -f "$file" ]] || { echo "no executable for target $t" >&2; exit 1; }
  xz -T0 -6 -c "$file" > "$PACK_DIR/$t.xz"
  readelf -d "$file" | grep -q 'libflashrnn_ops\.so' && needs_kernels=1
done
# The kernels' shared library, once for all of them: run_prebuilt.sh unpacks it
# beside them, where they look first ($ORIGIN, CMakeLists.txt).
if [[ $needs_kernels == 1 ]]; then
  kernels="${KERNELS_BUILD:-build}"
  [[ $kernels == build ]] || cmake --build "$kernels" -j"$(nproc)" --target flashrnn_ops
  xz -T0 -6 -c "$kernels/flashrnn_ops/libflashrnn_ops.so" > "$PACK_DIR/libflashrnn_ops.so.xz"
  [[ $kernels == build ]] || echo "kernels from $kernels" >> "$PACK_DIR/kernels.txt"
fi
{ git rev-parse --short HEAD; git diff --quiet HEAD -- flashrnn_ops experiments tests models trainer ||
  echo "+ uncommitted changes"; } > "$PACK_DIR/commit.txt"
du -sh "$PACK_DIR"; cat "$PACK_DIR/commit.txt"

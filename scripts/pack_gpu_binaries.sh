#!/usr/bin/env bash
# Builds test and benchmark executables here (the local build/ tree, the same
# sources and flags as CI) and packs them xz-compressed into build-bin/ (git-ignored;
# xz -6 makes flashbench ~13-16 MB, gzip ~37: two builds fit one 64 MiB carry for an A/B),
# so that a GPU machine runs them without building: carry build-bin, then
# `bash tests/gpu/run_prebuilt.sh ...` there. The machine there must have the
# same torch wheel (its libraries are found through its python3).
#
#   bash scripts/pack_gpu_binaries.sh [target ...]
#   default targets: flashrnn_ops_tests flashbench models_tests; flashtrain_torch packs
#   the Python extension (tests/gpu/run_python_tests.sh runs the package's tests)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(flashrnn_ops_tests flashbench models_tests)
cmake --build build -j"$(nproc)" --target "${targets[@]}"
rm -rf build-bin && mkdir -p build-bin
for t in "${targets[@]}"; do
  # The Python extension's file is build/python/_C.so (python/CMakeLists.txt).
  if [[ $t == flashtrain_torch ]]; then xz -T0 -6 -c build/python/_C.so > build-bin/$t.xz; continue; fi
  exe=$(find build -type f -executable -name "$t" -not -path '*/CMakeFiles/*' | head -1)
  [[ -n "$exe" ]] || { echo "no executable for target $t" >&2; exit 1; }
  xz -T0 -6 -c "$exe" > "build-bin/$t.xz"
done
{ git rev-parse --short HEAD; git diff --quiet HEAD -- flashrnn_ops experiments tests models trainer ||
  echo "+ uncommitted changes"; } > build-bin/commit.txt
du -sh build-bin; cat build-bin/commit.txt

#!/usr/bin/env bash
# Copies the headers the GPU machine lacks into the git-ignored folder
# .deps/include, so they can travel with the working tree (carry ".deps").
# Run it here, on the development machine, where the Debian packages are
# installed; cmake/FindTomlPlusPlus.cmake looks in .deps/include.
#
# Today that is TOML++ only (libtomlplusplus-dev, used header-only); the GPU
# machine has everything else (docs/DESIGN.md, "Dependencies").
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source_dir=/usr/include/toml++
target_dir="$repo/.deps/include"

if [[ ! -f "$source_dir/toml.h" ]]; then
  echo "gpu_headers.sh: $source_dir/toml.h not found; install libtomlplusplus-dev first" >&2
  exit 1
fi

mkdir -p "$target_dir"
rm -rf "$target_dir/toml++"
cp -r "$source_dir" "$target_dir/toml++"
echo "copied $source_dir to $target_dir/toml++ ($(du -sh "$target_dir/toml++" | cut -f1))"

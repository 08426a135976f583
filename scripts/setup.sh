#!/usr/bin/env bash
# Sets up a fresh Debian machine for flashtrain, builds it and runs the main job.
# Idempotent: a second run finds everything in place and only rebuilds what changed.
#
#   bash scripts/setup.sh            # install, build, run the main job
#   bash scripts/setup.sh --no-run   # install and build only (CI, GPU machines)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
RUN_MAIN_JOB=1
[[ "${1:-}" == "--no-run" ]] && RUN_MAIN_JOB=0

TORCH_VERSION="2.11.0"
DEBIAN_PACKAGES=(cmake ninja-build ccache g++ python3-venv
                 libtomlplusplus-dev libsentencepiece-dev libgtest-dev nlohmann-json3-dev zlib1g-dev libzstd-dev)

step() { printf '\n== %s\n' "$*"; }

# 1. Debian packages (only the missing ones; nothing to do on a second run).
missing=()
for p in "${DEBIAN_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  step "installing Debian packages: ${missing[*]}"
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# 2. libtorch: the torch wheel in a project-local virtual environment.
PY="$ROOT/.venv/bin/python"
if ! "$PY" -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '$TORCH_VERSION')" 2>/dev/null; then
  step "installing torch==$TORCH_VERSION into .venv"
  python3 -m venv "$ROOT/.venv"
  "$PY" -m pip install -q --upgrade pip
  "$PY" -m pip install -q "torch==$TORCH_VERSION"
fi
# safetensors + numpy: the test that loads our exports with Python's reader;
# pyarrow: Parquet corpora into JSON lines (data/tools/parquet_to_jsonl.py).
if ! "$PY" -c "import safetensors, numpy, pyarrow" 2>/dev/null; then
  step "installing safetensors, numpy and pyarrow into .venv"
  "$PY" -m pip install -q safetensors numpy pyarrow
fi

# 3. Configure (once) and build. ccache keeps rebuilds of unchanged files free.
export CCACHE_DIR="${CCACHE_DIR:-$ROOT/.ccache}"
export CCACHE_BASEDIR="$ROOT"
export CCACHE_SLOPPINESS="pch_defines,time_macros,include_file_mtime,include_file_ctime"
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-5G}"
if [[ ! -f build/build.ninja ]]; then
  step "configuring build/"
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache \
    -DFLASHTRAIN_PYTHON="$PY"
fi
step "building"
cmake --build build

# 4. The Python package (python/README.md) into .venv: the extension just built
#    and its Python files, copied; nothing is compiled. Reinstalled when they changed.
SITE="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')"
if ! cmp -s build/python/_C.so "$SITE/flashtrain/_C.so" ||
   ! cmp -s build/flashrnn_ops/libflashrnn_ops.so "$SITE/flashtrain/libflashrnn_ops.so" ||
   ! diff -rq -x __pycache__ -x '*.so' python/flashtrain "$SITE/flashtrain" >/dev/null 2>&1; then
  step "installing the flashtrain Python package into .venv (pip install ./python)"
  "$PY" -m pip install -q --no-deps --no-build-isolation --force-reinstall ./python
fi

# 5. The quickstart corpus: a few MB of English text from Debian packages,
#    tokenized into shards under .data/corpus-small (data/README.md).
if [[ ! -f .data/corpus-small/train_000000.bin ]]; then
  step "building the quickstart corpus (.data/corpus-small)"
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  apt-cache show dict-gcide >/dev/null 2>&1 || $SUDO apt-get update -q
  bash data/corpus/build_corpus.sh --small
fi

# 6. The main job: train the quickstart LSTM language model on the small corpus
#    (a second run resumes from its last checkpoint and finds nothing left to do).
if ((RUN_MAIN_JOB)); then
  step "running the main job: build/trainer/flashtrain --config configs/quickstart.toml"
  build/trainer/flashtrain --config configs/quickstart.toml
fi

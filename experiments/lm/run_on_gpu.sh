#!/usr/bin/env bash
# The LM configs on a GPU machine: builds flashtrain (build-gpu/, against the
# machine's python3 torch), then trains quickstart, lstm_12head and transformer
# for a few hundred steps and keeps each log and metrics file in $OUT; last,
# $OUT/summary.json (tokens/s, MFU, peak memory, final losses per config,
# summarize_runs.py) and the same as a table.
#
#   bash experiments/lm/run_on_gpu.sh [steps] [config ...]
#
# The GPU machine needs .deps/ and .data/corpus-small/ copied from here (TOML++
# headers from scripts/gpu_headers.sh; the small corpus). Without the full
# offline corpus (.data/corpus) the 768-wide configs train on the small one
# (the GPU machines have only .data/corpus-small: 1.5M tokens, vocabulary
# 4096, so losses are not comparable with the full corpus's; throughput,
# MFU and memory are, apart from the smaller embedding and head).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
BUILD="${BUILD:-build-gpu}"
OUT="${OUT:-$BUILD/lm-logs}"
STEPS="${1:-200}"
shift || true
if (($#)); then CONFIGS=("$@"); else CONFIGS=(quickstart lstm_12head transformer); fi
mkdir -p "$OUT"

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/device.txt"
if [[ ! -f "$BUILD/build.ninja" ]]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DFLASHTRAIN_PYTHON="$(command -v python3)" > "$OUT/configure.log" 2>&1 ||
    { tail -40 "$OUT/configure.log"; exit 1; }
fi
start=$(date +%s)
cmake --build "$BUILD" -j "$(nproc)" --target flashtrain > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
echo "build: $(( $(date +%s) - start )) s"

corpus=.data/corpus
[[ -f $corpus/tokenizer.model ]] || corpus=.data/corpus-small
for config in "${CONFIGS[@]}"; do
  run_dir="/tmp/flashtrain-lm/$config"
  rm -rf "$run_dir"
  flags=(--config "configs/$config.toml" --job.dump_folder="$run_dir" --training.steps="$STEPS"
         --training.device=cuda --checkpoint.interval=0 --metrics.log_every=10)
  if [[ $config != quickstart ]]; then
    flags+=(--tokenizer.path="$corpus/tokenizer.model" --data.train_shards="$corpus/train_*.bin"
            --data.val_shards="$corpus/val_*.bin" --validation.every="$STEPS" --lr_scheduler.warmup_steps=20)
  fi
  echo "== $config: flashtrain ${flags[*]}" | tee "$OUT/$config.log"
  start=$(date +%s)
  "$BUILD/trainer/flashtrain" "${flags[@]}" >> "$OUT/$config.log" 2>&1 || echo "$config: exit status $?" | tee -a "$OUT/$config.log"
  echo "$config: $(( $(date +%s) - start )) s" | tee -a "$OUT/$config.log"
  grep -E "^(device|model|batch|data):|validation at|done:" "$OUT/$config.log" || true
  tail -3 "$OUT/$config.log"
  cp "$run_dir/metrics.jsonl" "$OUT/$config.metrics.jsonl" 2>/dev/null || true
done

echo
python3 experiments/lm/summarize_runs.py "$OUT" "${CONFIGS[@]}" --corpus "$corpus"

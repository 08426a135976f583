#!/usr/bin/env bash
# Where a language model's training step spends its time and memory: each
# model of budget_models.sh trains a few steps at micro-batch BATCH, T 1024,
# bf16, with --profile (Kineto); the trainer's per-category summary, the
# heaviest kernels (top_kernels.py) and the step's peak memory are printed per
# model, and the traces are packed into $OUT/profile_step.tgz.
#
#   bash scripts/pack_gpu_binaries.sh flashtrain   # here
#   bash experiments/lm/profile_step.sh [model ...] # there (carry build-bin, a corpus)
#
# Knobs: BATCH (16), GRAPH (training.cuda_graph: auto), CORPUS (.data/corpus
# when it is there, else .data/corpus-small), EXTRA_FLAGS (appended last).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
BATCH="${BATCH:-16}"
GRAPH="${GRAPH:-auto}"
OUT="${OUT:-build-gpu/profile-step}"
RUNS=/tmp/flashtrain-profile-step
source experiments/lm/budget_models.sh
MODELS=("$@")
((${#MODELS[@]})) || MODELS=(slstm_12head lstm_12head transformer)
for m in "${MODELS[@]}"; do [[ -n ${CONFIG[$m]:-} ]] || { echo "profile_step: unknown model $m (${!CONFIG[*]})" >&2; exit 2; }; done
if [[ -z ${CORPUS:-} ]]; then
  CORPUS=.data/corpus
  [[ -f .data/corpus-xz/SHA256SUMS ]] && { bash scripts/corpus_for_gpu.sh unpack || exit 1; }
  [[ -f $CORPUS/train_000000.bin ]] || CORPUS=.data/corpus-small
fi
[[ -f $CORPUS/train_000000.bin ]] || { echo "profile_step: no corpus in $CORPUS" >&2; exit 1; }
source tests/gpu/prebuilt_flashtrain.sh || exit 1
mkdir -p "$OUT" && rm -rf "$RUNS" && mkdir -p "$RUNS"

for model in "${MODELS[@]}"; do
  log="$RUNS/$model.log"
  flags=(--config "configs/${CONFIG[$model]}.toml" ${CHANGES[$model]} --job.name="$model"
    --job.dump_folder="$RUNS/$model" --training.steps=8 --profile=3 --training.device=cuda
    --training.local_batch_size="$BATCH" --training.global_batch_size="$BATCH"
    --training.cuda_graph="$GRAPH" --checkpoint.enable=false --validation.every=0 --metrics.log_every=1
    --tokenizer.path="$CORPUS/tokenizer.model" --data.train_shards="$CORPUS/train_*.bin"
    --data.val_shards="$CORPUS/val_*.bin" ${EXTRA_FLAGS:-})
  echo "== $model: flashtrain ${flags[*]}" | tee "$log"
  "$FLASHTRAIN" "${flags[@]}" >> "$log" 2>&1 || echo "$model: exit status $?" | tee -a "$log"
  sed -n '/^profile of steps/,/^  idle/p' "$log"
  grep -E "^step +8/" "$log"
  python3 -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]; print("peak memory %.2f GiB" % max(x.get("peak_memory_gib", 0) for x in r))' \
    "$RUNS/$model/metrics.jsonl" 2> /dev/null
  for trace in "$RUNS/$model"/profile/*.json; do
    [[ -f $trace ]] || continue
    python3 experiments/lm/top_kernels.py "$trace" --top 30 | tee "$RUNS/$model.kernels.txt"
    # Operators are seen only in eager steps.
    [[ $GRAPH == off ]] && python3 experiments/lm/top_kernels.py "$trace" --top 40 --by-op | tee "$RUNS/$model.operators.txt"
  done
done
tar -C "$RUNS" -czf "$OUT/profile_step.tgz" . 2> /dev/null

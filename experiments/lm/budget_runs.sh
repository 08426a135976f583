#!/usr/bin/env bash
# experiments/README.md section 2: the five language models at one parameter budget
# (about 33 M parameters besides the 12.6 M of the tied embedding) on the full
# offline corpus, one pass (600 steps x 64 x 1024 tokens = 39.3 M tokens, the
# configs' recipe: AdamW, lr 1e-3, cosine, bf16), validation every 100 steps.
# The models and what differs from their config in configs/: budget_models.sh
# (flashtrain prints the exact counts into each log).
# The runs share out the machine's GPUs, one run per GPU at a time (a run's
# tokens/s is its own GPU's). Logs, metrics, summary.json (summarize_runs.py)
# and the loss / throughput figure (plot_metrics.py, if matplotlib is there)
# go to $OUT, packed as lm_budget.tgz; the table is printed last.
#
#   bash scripts/pack_gpu_binaries.sh flashtrain && bash scripts/corpus_for_gpu.sh pack   # here
#   bash experiments/lm/budget_runs.sh [model ...]                                         # there
#
# The GPU machine needs build-bin/ and .data/corpus-xz/ copied from here; with 4 GPUs four run at once.
# Knobs: EXTRA_FLAGS (overrides after all others, e.g. a tiny model on the CPU
# to test this script), STEPS (600), CAP seconds per run (540).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
STEPS="${STEPS:-600}"
CAP="${CAP:-540}"
OUT="${OUT:-build-gpu/lm-budget}"
RUNS=/tmp/flashtrain-lm-budget
source experiments/lm/budget_models.sh
# Slowest first, so the queues of the GPUs end close together.
MODELS=("$@")
((${#MODELS[@]})) || MODELS=(lstm_1head slstm_12head lstm_12head transformer linear_scan)
for m in "${MODELS[@]}"; do [[ -n ${CONFIG[$m]:-} ]] || { echo "budget_runs: unknown model $m (${!CONFIG[*]})" >&2; exit 2; }; done
mkdir -p "$OUT"
rm -rf "$RUNS" && mkdir -p "$RUNS"

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$RUNS/device.txt" || exit 1
GPUS=$(grep -c . "$RUNS/device.txt")
bash scripts/corpus_for_gpu.sh unpack || exit 1
CORPUS=.data/corpus
source tests/gpu/prebuilt_flashtrain.sh || exit 1

# run MODEL GPU: one training run; its log ends with the lines summarize_runs.py reads.
run() {
  local model=$1 gpu=$2 log="$RUNS/$1.log" start rc
  local flags=(--config "configs/${CONFIG[$model]}.toml" ${CHANGES[$model]} --job.name="$model"
    --job.dump_folder="$RUNS/$model" --training.steps="$STEPS" --training.device=cuda --checkpoint.enable=false
    --tokenizer.path="$CORPUS/tokenizer.model" --data.train_shards="$CORPUS/train_*.bin"
    --data.val_shards="$CORPUS/val_*.bin" ${EXTRA_FLAGS:-})
  echo "== $model on GPU $gpu: flashtrain ${flags[*]}" > "$log"
  start=$(date +%s)
  CUDA_VISIBLE_DEVICES=$gpu timeout --signal=TERM --kill-after=20 "$CAP" "$FLASHTRAIN" "${flags[@]}" >> "$log" 2>&1
  rc=$?
  ((rc == 0)) || echo "$model: exit status $rc" >> "$log"
  echo "$model: $(( $(date +%s) - start )) s" >> "$log"
  cp "$RUNS/$model/metrics.jsonl" "$RUNS/$model.metrics.jsonl" 2> /dev/null
  echo "[$model, GPU $gpu] $(tail -1 "$log"), exit $rc; $(grep -E 'validation at' "$log" | tail -1)"
}

# Model i runs on GPU i mod GPUS; each GPU's models run one after another.
for ((g = 0; g < GPUS; g++)); do
  (for ((i = g; i < ${#MODELS[@]}; i += GPUS)); do run "${MODELS[$i]}" "$g"; done) &
done
wait

python3 experiments/lm/summarize_runs.py "$RUNS" "${MODELS[@]}" --corpus "$CORPUS (38.4 M tokens)" > "$RUNS/summary.txt"
metrics=() labels=()
for m in "${MODELS[@]}"; do [[ -f $RUNS/$m.metrics.jsonl ]] && metrics+=("$RUNS/$m.metrics.jsonl") labels+=("$m"); done
python3 experiments/lm/plot_metrics.py "${metrics[@]}" --labels "$(IFS=,; echo "${labels[*]}")" --output "$RUNS/lm_budget.png" > /dev/null 2>&1 ||
  echo "(no figure: plot_metrics.py failed or no matplotlib)" >> "$RUNS/summary.txt"
grep -hE "^  total|^model:" "$RUNS"/*.log >> "$RUNS/summary.txt"
cp "$RUNS/summary.json" "$RUNS/summary.txt" "$OUT/" 2> /dev/null
cp "$RUNS/lm_budget.png" "$OUT/" 2> /dev/null
tar -C "$RUNS" -czf "$OUT/lm_budget.tgz" $(cd "$RUNS" && ls *.log *.metrics.jsonl *.txt summary.json *.png 2> /dev/null)
cat "$RUNS/summary.txt"

#!/usr/bin/env bash
# Data-parallel scaling of the language models over the GPUs of this
# machine, with the prebuilt flashtrain (no build here):
#   scale_<config>_<N>gpu  N = 1, 2, 4, 8 (as many as the machine has): the same
#       work per GPU, 16 x 1024 tokens per step (global batch 16 N, no gradient
#       accumulation), STEPS_SCALE steps; scaling efficiency = tokens/s at N /
#       (N x tokens/s at 1)
#   curve_<config>_<N>gpu  the config's own global batch (64 x 1024 tokens) on 1
#       GPU (4 accumulation steps) and on the most GPUs, CURVE_STEPS steps with
#       validation: the same optimisation, so the loss curves must agree
# Runs on more than one GPU start through torchrun (`python3 -m
# torch.distributed.run --standalone --nproc-per-node=N --no-python flashtrain`),
# the command of the issue. Everything goes to $OUT: scaling.tgz (every run's
# log and metrics.jsonl), summary.json and the table printed last
# (experiments/distributed/summarize_scaling.py).
#
#   bash scripts/pack_gpu_binaries.sh flashtrain && bash scripts/corpus_for_gpu.sh pack   # here
#   bash experiments/distributed/scaling.sh                                               # there
#
# A machine with 4 GPUs of one host (2 or 8 alike), with build-bin/ and .data/corpus-xz/ copied there.
# Knobs: EXTRA_FLAGS (overrides after all others, e.g. a tiny model on the CPU
# to test this script), CONFIGS ("lstm_12head transformer"), STEPS_SCALE (80), CURVE_STEPS (300),
# MAX_GPUS (all), PARTS ("scale curve": which of the two to run).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
CONFIGS=(${CONFIGS:-lstm_12head transformer})
STEPS_SCALE="${STEPS_SCALE:-80}"
CURVE_STEPS="${CURVE_STEPS:-300}"
PARTS="${PARTS:-scale curve}"
OUT="${OUT:-build-gpu/scaling}"
RUNS=/tmp/flashtrain-scaling
LOCAL_BATCH=16
CURVE_GLOBAL_BATCH=64  # the configs' training.global_batch_size
mkdir -p "$OUT"
rm -rf "$RUNS" && mkdir -p "$RUNS"
T0=$(date +%s)
note() { echo "[$(( $(date +%s) - T0 )) s] $*" | tee -a "$RUNS/progress.txt"; }

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$RUNS/device.txt" || exit 1
GPUS=$(grep -c . "$RUNS/device.txt")
GPUS=$(( ${MAX_GPUS:-$GPUS} < GPUS ? ${MAX_GPUS:-$GPUS} : GPUS ))
COUNTS=()
for n in 1 2 4 8; do ((n <= GPUS)) && COUNTS+=("$n"); done
note "$(head -1 "$RUNS/device.txt") x $GPUS; GPU counts: ${COUNTS[*]}"
nvidia-smi topo -m > "$RUNS/topology.txt" 2>&1 || true

bash scripts/corpus_for_gpu.sh unpack || exit 1
CORPUS=.data/corpus
# Unpacks build-bin/flashtrain.xz and checks that it starts against this torch.
source tests/gpu/prebuilt_flashtrain.sh || exit 1
export NCCL_DEBUG=WARN NCCL_NVLS_ENABLE=0  # NVLink multicast off (NVLS is not available on every host)
printf 'name\tconfig\tpurpose\tgpus\tsteps\texit\tseconds\n' > "$RUNS/runs.tsv"

# train NAME CONFIG PURPOSE N STEPS [flags...] [--torchrun]
train() {
  local name=$1 config=$2 purpose=$3 n=$4 steps=$5
  shift 5
  local launch=plain  # a last argument --torchrun launches even 1 GPU through torchrun
  [[ $# -gt 0 && ${*: -1} == --torchrun ]] && { launch=torchrun; set -- "${@:1:$#-1}"; }
  local flags=(--config "configs/$config.toml" --job.dump_folder="$RUNS/$name" --training.steps="$steps"
    --training.device=cuda --checkpoint.enable=false --metrics.log_every=10
    --tokenizer.path="$CORPUS/tokenizer.model" --data.train_shards="$CORPUS/train_*.bin"
    --data.val_shards="$CORPUS/val_*.bin" --parallelism.timeout_seconds=120 "$@" ${EXTRA_FLAGS:-})
  local cmd
  if ((n == 1)) && [[ $launch == plain ]]; then
    cmd=(env CUDA_VISIBLE_DEVICES=0 "$FLASHTRAIN" "${flags[@]}")
  else
    cmd=(python3 -m torch.distributed.run --standalone --nproc-per-node="$n" --no-python "$FLASHTRAIN" "${flags[@]}")
  fi
  echo "${cmd[*]}" > "$RUNS/$name.log"
  local start rc seconds
  start=$(date +%s.%N)
  timeout --signal=TERM --kill-after=20 400 "${cmd[@]}" >> "$RUNS/$name.log" 2>&1
  rc=$?
  seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  cp "$RUNS/$name/metrics.jsonl" "$RUNS/$name.metrics.jsonl" 2> /dev/null
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$config" "$purpose" "$n" "$steps" "$rc" "$seconds" >> "$RUNS/runs.tsv"
  note "$name: exit $rc after $seconds s; $(grep -E '^step' "$RUNS/$name.log" | tail -1)"
  ((rc == 0)) || tail -15 "$RUNS/$name.log"
}

[[ " $PARTS " == *" scale "* ]] && for config in "${CONFIGS[@]}"; do
  for n in "${COUNTS[@]}"; do
    train "scale_${config}_${n}gpu" "$config" scale "$n" "$STEPS_SCALE" --validation.every=0 \
      --training.local_batch_size=$LOCAL_BATCH --training.global_batch_size=$((LOCAL_BATCH * n)) \
      --lr_scheduler.warmup_steps=20
  done
  # 1 GPU once more, launched like the N-GPU runs (torchrun sets OMP_NUM_THREADS=1
  # and its own environment in each rank): the like-for-like baseline.
  ((GPUS > 1)) && train "scale_${config}_1gpu_torchrun" "$config" scale_torchrun 1 "$STEPS_SCALE" \
    --validation.every=0 --training.local_batch_size=$LOCAL_BATCH --training.global_batch_size=$LOCAL_BATCH \
    --lr_scheduler.warmup_steps=20 --torchrun
done
CURVE_COUNTS=(1)
((COUNTS[-1] > 1)) && CURVE_COUNTS+=("${COUNTS[-1]}")
[[ " $PARTS " == *" curve "* ]] && for config in "${CONFIGS[@]}"; do
  for n in "${CURVE_COUNTS[@]}"; do
    # The config's global batch: 1 GPU accumulates, 8 GPUs take 8 rows each.
    local_rows=$((CURVE_GLOBAL_BATCH / n < LOCAL_BATCH ? CURVE_GLOBAL_BATCH / n : LOCAL_BATCH))
    train "curve_${config}_${n}gpu" "$config" curve "$n" "$CURVE_STEPS" --validation.every=50 \
      --validation.steps=10 --training.local_batch_size=$local_rows \
      --lr_scheduler.warmup_steps=30
  done
done

note "summary"
python3 experiments/distributed/summarize_scaling.py "$RUNS" | tee "$RUNS/summary.txt"
cp "$RUNS/summary.json" "$RUNS/summary.txt" "$OUT/" 2> /dev/null
for config in "${CONFIGS[@]}"; do
  curves=() labels=()
  for n in "${CURVE_COUNTS[@]}"; do
    [[ -f $RUNS/curve_${config}_${n}gpu.metrics.jsonl ]] && curves+=("$RUNS/curve_${config}_${n}gpu.metrics.jsonl") labels+=("$n GPU")
  done
  python3 experiments/lm/plot_metrics.py "${curves[@]}" --labels "$(IFS=,; echo "${labels[*]}")" \
    --output "$RUNS/curves_$config.png" > /dev/null 2>&1 || echo "(no figure for $config: plot_metrics.py failed or no matplotlib)"
done
tar -C "$RUNS" -czf "$OUT/scaling.tgz" --exclude='*/checkpoints' --exclude='*/export' \
  $(cd "$RUNS" && ls *.log *.metrics.jsonl *.txt *.tsv *.png summary.json 2> /dev/null)

#!/usr/bin/env bash
# Parity on the CPU at a small scale (width 32, one head, fp32, batch 64, 2000
# steps; train lengths 3..20, validation 21..64 = length generalisation): which
# part of the block stops the LSTM from extrapolating. One process per variant,
# one thread each; metrics under $OUT (default /tmp/cpu-parity). ~3 min per
# variant on one core.
#   [STEPS=2000] bash experiments/tasks/cpu_parity_blocks.sh [variant ...]
#   variants: default (2 blocks with feed-forward), retain0, plain (1 block, no
#   feed-forward), two_noffn, one_ffn, plain_s1 … plain_s7, plain_s1_wd0, default_s1, default_s5, default_s7
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT=${OUT:-/tmp/cpu-parity}; mkdir -p "$OUT"
FT=${FLASHTRAIN:-build/trainer/flashtrain}
STEPS=${STEPS:-2000}
declare -A flags=(
  [default]=""
  [retain0]="--model.retain_bias_min=0 --model.retain_bias_max=0"
  [plain]="--model.n_layers=1 --model.ffn_factor=0"
  [two_noffn]="--model.n_layers=2 --model.ffn_factor=0"
  [one_ffn]="--model.n_layers=1"
  [plain_s1]="--model.n_layers=1 --model.ffn_factor=0 --training.seed=1"
  [plain_s2]="--model.n_layers=1 --model.ffn_factor=0 --training.seed=2"
  [default_s1]="--training.seed=1"
  [default_s5]="--training.seed=5"
  [default_s7]="--training.seed=7"
  [plain_s3]="--model.n_layers=1 --model.ffn_factor=0 --training.seed=3"
  [plain_s4]="--model.n_layers=1 --model.ffn_factor=0 --training.seed=4"
  [plain_s5]="--model.n_layers=1 --model.ffn_factor=0 --training.seed=5"
  [plain_s6]="--model.n_layers=1 --model.ffn_factor=0 --training.seed=6"
  [plain_s7]="--model.n_layers=1 --model.ffn_factor=0 --training.seed=7"
  [plain_s1_wd0]="--model.n_layers=1 --model.ffn_factor=0 --training.seed=1 --optimizer.weight_decay=0"
)
variants=("$@"); [[ ${#variants[@]} -gt 0 ]] || variants=(default plain)
for v in "${variants[@]}"; do
  [[ -v "flags[$v]" ]] || { echo "unknown variant $v (known: ${!flags[*]})" >&2; exit 2; }
  # shellcheck disable=SC2086
  OMP_NUM_THREADS=1 "$FT" --config configs/tasks_parity.toml --training.device=cpu \
    --training.mixed_precision=fp32 --model.dim=32 --model.n_heads=1 --model.head_dim=32 \
    --data.seq_len=64 --data.task_train_min_len=3 --data.task_train_max_len=20 \
    --data.task_val_min_len=21 --data.task_val_max_len=64 --training.local_batch_size=64 \
    --training.steps=$STEPS --validation.every=$((STEPS / 4)) --checkpoint.interval=0 \
    --job.dump_folder="$OUT/$v" ${flags[$v]} > "$OUT/$v.log" 2>&1 &
done
wait
for v in "${variants[@]}"; do
  printf '%-10s' "$v"; grep -o "validation at step [0-9]*: .*scaled accuracy [-0-9.]*" "$OUT/$v.log" |
    sed -E 's/validation at step ([0-9]+).*scaled accuracy ([-0-9.]+)/ \1:\2/' | tr -d '\n'; echo
done

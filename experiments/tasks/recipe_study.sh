#!/usr/bin/env bash
# What makes the plain LSTM's solutions of cycle navigation and modular
# arithmetic hold with length: the xLSTM paper's geometry (two layers of 128,
# bf16, AdamW with weight decay 0.1) against one change at a time, on seeds the
# suite does not use (10..14), lr 1e-3, the suite's cap and early stop; each
# variant a run_suite.py suite of its own (gpu_suite.sh, NAME=recipe_<variant>),
# all at once on GPUS.
#   two_layers_128   the xLSTM paper's geometry
#   fp32             the same in float32 (no bf16 autocast)
#   no_wd            the same without weight decay
#   one_layer_256    Delétang et al.'s geometry, the suite's plain rows
# Each writes $OUT/recipe_<variant>.{tgz,txt,log}; calling again continues.
#
#   [GPUS=3] [JOBS=16] [DEADLINE=480] [LR=1e-3] [STEPS=100000] bash experiments/tasks/recipe_study.sh
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
XLSTM="--model.dim=128 --model.n_layers=2"
declare -A VARIANTS=(
  [two_layers_128]="$XLSTM"
  [fp32]="$XLSTM --training.mixed_precision=fp32"
  [no_wd]="$XLSTM --optimizer.weight_decay=0"
  [one_layer_256]="--model.dim=256 --model.n_layers=1"
)
JOBS="${JOBS:-16}"
per_variant=$(( (JOBS + ${#VARIANTS[@]} - 1) / ${#VARIANTS[@]} ))
for variant in "${!VARIANTS[@]}"; do
  # shellcheck disable=SC2086  # the overrides are words
  NAME="recipe_$variant" JOBS="$per_variant" GPUS="${GPUS:-}" DEADLINE="${DEADLINE:-480}" \
    bash experiments/tasks/gpu_suite.sh --tasks cycle_navigation,modular_arithmetic --models lstm \
    --lrs "${LR:-1e-3}" --seeds 10,11,12,13,14 --row-seeds "" --steps "${STEPS:-100000}" \
    --checkpoint-interval 5000 -- ${VARIANTS[$variant]} &
done
wait

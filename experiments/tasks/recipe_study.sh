#!/usr/bin/env bash
# What makes the plain LSTM's solutions of cycle navigation and modular
# arithmetic hold with length: the xLSTM paper's geometry (two layers of 128,
# bf16, AdamW with weight decay 0.1) against one change at a time, each variant
# a suite of its own (variants.sh: NAME=recipe_<variant>, seeds 10..14, lr 1e-3).
#   two_layers_128   the xLSTM paper's geometry
#   fp32             the same in float32 (no bf16 autocast)
#   no_wd            the same without weight decay
#   one_layer_256    Delétang et al.'s geometry, the suite's plain rows
# and, on one layer of 256, whether a sharper fit holds with length:
#   one_layer_256_fp32      float32 (no bf16 autocast), in training and scoring
#   one_layer_256_loss_1e-6 trained on to a mean training loss of 1e-6
#   one_layer_256_to_cap    no early stop: the whole 100k-step cosine schedule
# ONLY= a comma list of variants runs those alone.
#
#   [GPUS=3] [JOBS=16] [DEADLINE=480] [LR=1e-3] [STEPS=100000] [ONLY=a,b] bash experiments/tasks/recipe_study.sh
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
source experiments/tasks/variants.sh
XLSTM="--model.dim=128 --model.n_layers=2"
declare -A VARIANTS=(
  [two_layers_128]="$XLSTM"
  [fp32]="$XLSTM --training.mixed_precision=fp32"
  [no_wd]="$XLSTM --optimizer.weight_decay=0"
  [one_layer_256]="--model.dim=256 --model.n_layers=1"
  [one_layer_256_fp32]="--model.dim=256 --model.n_layers=1 --training.mixed_precision=fp32"
  [one_layer_256_loss_1e-6]="--model.dim=256 --model.n_layers=1 --training.target_loss=1e-6"
  [one_layer_256_to_cap]="--model.dim=256 --model.n_layers=1 --training.target_loss=0"
)
run_variants recipe cycle_navigation,modular_arithmetic lstm

#!/usr/bin/env bash
# The long-context table (experiments/README.md §2): the five models of the
# parameter-budget comparison (budget_models.sh) at sequences of T tokens for
# each T of LENGTHS, every step the same TOKENS tokens (a global batch of
# TOKENS / T sequences), the micro-batch auto, STEPS steps each: tokens/s,
# peak memory and the validation loss after the same tokens. Each length is
# one budget_runs.sh call (one model per GPU at a time); then
# long_context_table.py joins them into $OUT/long_context.json and a table.
#
#   [LENGTHS="1024 4096 16384 32768"] [TOKENS=262144] [STEPS=40] [CAP=540] [OUT=build-gpu/lm-long] \
#     [EXTRA_FLAGS="--model.wavefront_chunks=8"] bash experiments/lm/long_context.sh [model ...]
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
LENGTHS="${LENGTHS:-1024 4096 16384 32768}"
TOKENS="${TOKENS:-262144}"
BASE="${OUT:-build-gpu/lm-long}"
for T in $LENGTHS; do
  if ((TOKENS % T)); then echo "long_context: TOKENS=$TOKENS is no multiple of T=$T" >&2; exit 2; fi
done
for T in $LENGTHS; do
  echo "== T $T: $((TOKENS / T)) sequences a step"
  OUT="$BASE/T$T" STEPS="${STEPS:-40}" CAP="${CAP:-540}" \
    EXTRA_FLAGS="--data.seq_len=$T --training.global_batch_size=$((TOKENS / T)) ${EXTRA_FLAGS:-}" \
    bash experiments/lm/budget_runs.sh "$@"
done
python3 experiments/lm/long_context_table.py "$BASE" --tokens "$TOKENS"

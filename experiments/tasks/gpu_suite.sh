#!/usr/bin/env bash
# The state-tracking suite (run_suite.py) on a GPU machine with the prebuilt
# flashtrain (scripts/pack_gpu_binaries.sh flashtrain; carry build-bin): many
# small runs at once over the GPUs named, stopped from starting new runs after
# DEADLINE seconds (the suite resumes: rerun to finish). Packs suite.json and
# every run's metrics and log into $OUT/$NAME.tgz, the table into
# $OUT/$NAME.txt, and draws the heat map into $OUT/$NAME.png (matplotlib).
#
#   [GPUS=0,1,2] [JOBS=12] [DEADLINE=450] [STEPS=2000] [SEEDS=0,1,2] [NAME=suite] \
#     bash experiments/tasks/gpu_suite.sh [run_suite.py options] [-- overrides]
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
NAME="${NAME:-suite}"
OUT="${OUT:-/tmp/tasks-out}"
DIR="/tmp/flashtrain-tasks/$NAME"
mkdir -p "$OUT" "$DIR"
source tests/gpu/prebuilt_flashtrain.sh || exit 1
python3 experiments/tasks/run_suite.py --out "$DIR" --flashtrain "$FLASHTRAIN" \
  --jobs "${JOBS:-12}" --gpus "${GPUS:-0,1,2}" --deadline "${DEADLINE:-450}" --steps "${STEPS:-2000}" \
  --seeds "${SEEDS:-0,1,2}" "$@" > "$DIR/table.txt" 2>&1
echo "gpu_suite $NAME: exit $?"
python3 experiments/plot_results.py --results /nonexistent --suite "$DIR/suite.json" --out "$DIR" > /dev/null 2>&1 &&
  mv "$DIR/tasks.png" "$DIR/$NAME.png" || echo "(no heat map: plot_results.py failed or no matplotlib)"
cp "$DIR/table.txt" "$OUT/$NAME.txt"
cp "$DIR/$NAME.png" "$OUT/" 2> /dev/null
(cd "$DIR" && tar -czf "$OUT/$NAME.tgz" suite.json table.txt runs/*/metrics.jsonl runs/*/log.txt 2> /dev/null)
tail -15 "$DIR/table.txt"

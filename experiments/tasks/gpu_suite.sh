#!/usr/bin/env bash
# The state-tracking suite (run_suite.py) on a GPU machine with the prebuilt
# flashtrain (scripts/pack_gpu_binaries.sh flashtrain; carry build-bin): JOBS
# runs at once over the GPUs, none started after DEADLINE seconds and the
# running ones checkpointed and stopped. The suite folder stays in /tmp while
# the machine is held, so calling again continues it; FROM= an earlier call's
# $NAME.tgz (carried into the tree) seeds a fresh machine's folder with its
# finished runs. Writes into $OUT: $NAME.tgz (suite.json, table, plots, every
# run's records), $NAME.txt (the table), $NAME.log (the suite's output) and the
# plots $NAME-heat_map.png and $NAME-accuracy_by_length.png.
#
# START_DEADLINE= (seconds, below DEADLINE) starts no run after it and lets the
# running ones go on to DEADLINE: the last call of a machine's time finishes
# what it holds.
#
#   [GPUS=all] [JOBS=cores] [DEADLINE=480] [START_DEADLINE=] [NAME=suite] [FROM=earlier.tgz] [MPS=1] \
#     bash experiments/tasks/gpu_suite.sh [run_suite.py options] [-- overrides]
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
NAME="${NAME:-suite}"
OUT="${OUT:-/tmp/tasks-out}"
DIR="/tmp/flashtrain-tasks/$NAME"
mkdir -p "$OUT" "$DIR"
if [ -n "${FROM:-}" ]; then
  tar -xzf "$FROM" -C "$DIR" || { echo "gpu_suite: cannot unpack FROM=$FROM" >&2; exit 1; }
fi
source tests/gpu/prebuilt_flashtrain.sh || exit 1
GPUS="${GPUS:-$(nvidia-smi --query-gpu=index --format=csv,noheader | paste -sd,)}"
JOBS="${JOBS:-$(nproc)}"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"  # a run per core (nproc reads it: set after)
# MPS (default on where the driver has it) lets the runs' small kernels share
# the GPU at once instead of taking turns; it is a daemon of this user, stopped
# on exit by the call that started it (two suites at once share one), and
# changes no setting of the card.
if [ "${MPS:-1}" = 1 ] && command -v nvidia-cuda-mps-control > /dev/null; then
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/flashtrain-mps/pipe CUDA_MPS_LOG_DIRECTORY=/tmp/flashtrain-mps/log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  if [ -S "$CUDA_MPS_PIPE_DIRECTORY/control" ] && echo get_server_list | nvidia-cuda-mps-control > /dev/null 2>&1; then
    echo "gpu_suite: MPS already on"
  else
    nvidia-cuda-mps-control -d && trap 'echo quit | nvidia-cuda-mps-control' EXIT && echo "gpu_suite: MPS on"
  fi
fi
PYTHONUNBUFFERED=1 python3 experiments/tasks/run_suite.py --out "$DIR" --flashtrain "$FLASHTRAIN" \
  --jobs "$JOBS" --gpus "$GPUS" --deadline "${DEADLINE:-480}" --start-deadline "${START_DEADLINE:-0}" \
  --pack "$OUT/$NAME.tgz" \
  "$@" > "$OUT/$NAME.log" 2>&1
status=$?
cp "$DIR/table.txt" "$OUT/$NAME.txt" 2> /dev/null
for plot in heat_map accuracy_by_length; do
  cp "$DIR/$plot.png" "$OUT/$NAME-$plot.png" 2> /dev/null
done
tail -25 "$OUT/$NAME.log"
echo "gpu_suite $NAME: exit $status"
exit "$status"

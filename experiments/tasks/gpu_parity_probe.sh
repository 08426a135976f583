#!/usr/bin/env bash
# On the GPU machine (carry build-bin with flashtrain.xz from scripts/pack_gpu_binaries.sh
# flashtrain): parity with the LSTM, validated in distribution (3..40) and out (40..256),
# printing the validation records — the check behind experiments/README.md section 3.
#   [STEPS=2000] bash experiments/tasks/gpu_parity_probe.sh [long|diag|init]
set -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT=${OUT:-/tmp/parity-probe}; mkdir -p "$OUT"
run() {  # name, overrides...
  local name=$1; shift
  timeout 400 bash tests/gpu/run_prebuilt.sh flashtrain --config configs/tasks_parity.toml --checkpoint.interval=0 \
    --job.dump_folder="/tmp/pp/$name" "$@" > "$OUT/$name.log" 2>&1; echo "$name rc=$?"
  cp /tmp/pp/$name/metrics.jsonl "$OUT/$name.metrics.jsonl" 2>/dev/null
  grep '"kind": *"val"' "$OUT/$name.metrics.jsonl" | python3 -c '
import json,sys
for l in sys.stdin:
  r=json.loads(l); print("  step %5d val loss %.3f acc %.3f scaled %.3f" % (r["step"], r["loss"], r.get("accuracy",0), r["scaled_accuracy"]))'
}
STEPS=${STEPS:-2000}
if [[ "${1:-}" == long ]]; then  # two models side by side on the one GPU, out-of-distribution only
  run lstm_long --training.steps=$STEPS --validation.every=$((STEPS / 4)) &
  run slstm_long --model.kind=slstm --training.steps=$STEPS --validation.every=$((STEPS / 4)) &
  wait
  exit 0
fi
if [[ "${1:-}" == diag ]]; then  # which part of the setup stops extrapolation: three LSTM variants at once
  run heads1 --model.n_heads=1 --model.head_dim=128 --training.steps=$STEPS --validation.every=$((STEPS / 2)) &
  run wd0 --optimizer.weight_decay=0 --training.steps=$STEPS --validation.every=$((STEPS / 2)) &
  run fp32 --training.mixed_precision=fp32 --training.steps=$STEPS --validation.every=$((STEPS / 2)) &
  wait
  exit 0
fi
if [[ "${1:-}" == init ]]; then  # the suspects left: gate initialisation and the block around the LSTM
  run retain0 --model.retain_bias_min=0 --model.retain_bias_max=0 --training.steps=$STEPS --validation.every=$((STEPS / 2)) &
  run plain --model.n_layers=1 --model.ffn_factor=0 --training.steps=$STEPS --validation.every=$((STEPS / 2)) &
  run plain_retain0 --model.n_layers=1 --model.ffn_factor=0 --model.retain_bias_min=0 --model.retain_bias_max=0 \
    --training.steps=$STEPS --validation.every=$((STEPS / 2)) &
  wait
  exit 0
fi
run lstm_in  --training.steps=$STEPS --validation.every=500 --data.task_val_min_len=3 --data.task_val_max_len=40
run lstm_out --training.steps=$STEPS --validation.every=500
run lstm_lr3 --training.steps=$STEPS --validation.every=500 --optimizer.lr=3e-3 --data.task_val_min_len=3 --data.task_val_max_len=40

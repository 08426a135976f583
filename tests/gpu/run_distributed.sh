#!/usr/bin/env bash
# Data parallelism on a machine with 2 GPUs, in one run of about
# 8 minutes: builds flashtrain (build-gpu/, against the machine's python3
# torch), then for configs/lstm_12head.toml and configs/transformer.toml on
# the small corpus:
#   1gpu     one GPU, the config's global batch (local 16 x 4 accumulation)
#   nproc2   flashtrain --nproc 2, the same global batch (16 x 2 x 2 ranks):
#            its loss curve is compared with 1gpu's
#   scale2   --nproc 2 with 1gpu's per-GPU work (global batch doubled): the
#            tokens/s ratio to 1gpu is the scaling
#   torchrun python3 -m torch.distributed.run --no-python --nproc-per-node=2
#            (if present), short; its warm-up steps are compared with nproc2's
# measuring tokens/s and the all-reduce overlap (comm_seconds: the
# all-reduces' GPU time per step; comm_wait_seconds: what wait_all still
# waited after backward; comm_overlap = 1 - wait/comm); then
#   kill     kills rank 1 of a running --nproc 2 job: the launcher must stop
#            rank 0 and exit non-zero naming rank 1 within a bound;
#   orphan   the same with two ranks started by hand (no launcher): rank 0
#            must notice on its own and exit non-zero naming rank 1.
# Logs, metrics and summary.json go to $OUT; a table is printed last.
#
#   bash tests/gpu/run_distributed.sh
#
# A machine with 2 GPUs of one host, with .deps/ and .data/corpus-small/ copied there
# (TOML++ headers from scripts/gpu_headers.sh; the small corpus).
# Knobs: STEPS (200), SHORT_STEPS (50), BUDGET seconds for the whole script
# (470): a run that would outlast it is cut short (its metrics so far count)
# and later optional runs are skipped. SMOKE=1 runs the whole script on the
# CPU with tiny models and an existing build/ (store backend), to test the
# script itself where there is no GPU.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
REPO="$(pwd)"
STEPS="${STEPS:-200}"
SHORT_STEPS="${SHORT_STEPS:-50}"
BUDGET="${BUDGET:-470}"
SMOKE="${SMOKE:-0}"
GLOBAL_BATCH=64  # the configs' training.global_batch_size
DEVICE=cuda
SHRINK=()
BUILD="${BUILD:-build-gpu}"
if ((SMOKE)); then
  BUILD=build
  OUT="${OUT:-$BUILD/distributed-smoke}"
  GLOBAL_BATCH=8
  DEVICE=cpu
  SHRINK=(--model.dim=64 --model.n_layers=1 --model.n_heads=2 --model.head_dim=32 --data.seq_len=32
          --training.local_batch_size=2 --training.global_batch_size=8 --training.mixed_precision=fp32)
fi
OUT="${OUT:-$BUILD/distributed-logs}"
RUNS=/tmp/flashtrain-distributed
mkdir -p "$OUT"
rm -rf "$RUNS"
mkdir -p "$RUNS"
T0=$(date +%s)
elapsed() { echo $(( $(date +%s) - T0 )); }
left() { echo $(( BUDGET - $(elapsed) )); }
die() {
  echo "run_distributed: FAILED: $*" | tee -a "$OUT/summary.txt" >&2
  exit 1
}
note() { echo "[$(elapsed) s] $*" | tee -a "$OUT/progress.txt"; }

# --- the machine and the inputs ----------------------------------------------
if ((SMOKE)); then
  echo "cpu (SMOKE=1)" > "$OUT/device.txt"
else
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/device.txt" 2>&1 ||
    die "nvidia-smi failed: $(cat "$OUT/device.txt")"
  cat "$OUT/device.txt"
  GPUS=$(grep -c . "$OUT/device.txt")
  ((GPUS >= 2)) || die "needs 2 GPUs, found $GPUS"
fi
[[ -f .deps/include/toml++/toml.h ]] || die "no .deps/include/toml++ (run scripts/gpu_headers.sh here first; carry .deps)"
CORPUS=.data/corpus-small
[[ -f $CORPUS/tokenizer.model && -f $CORPUS/train_000000.bin ]] || die "no $CORPUS (carry .data/corpus-small)"
PY="$(command -v python3)" || die "no python3"
((SMOKE)) && PY="$REPO/.venv/bin/python"
"$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" > "$OUT/torch.txt" 2>&1 ||
  die "python3 cannot import torch: $(cat "$OUT/torch.txt")"
HAVE_TORCHRUN=0
"$PY" -c "import torch.distributed.run" > /dev/null 2>&1 && HAVE_TORCHRUN=1

# --- build ---------------------------------------------------------------------
note "building flashtrain in $BUILD"
if [[ ! -f "$BUILD/build.ninja" ]]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFLASHTRAIN_PYTHON="$PY" > "$OUT/configure.log" 2>&1 ||
    { tail -40 "$OUT/configure.log"; die "configure failed (configure.log)"; }
fi
start=$(date +%s)
cmake --build "$BUILD" -j "$(nproc)" --target flashtrain > "$OUT/build.log" 2>&1 ||
  { tail -40 "$OUT/build.log"; die "build failed (build.log)"; }
BUILD_S=$(( $(date +%s) - start ))
# (After the build: an older build-gpu/ reconfigures during it.)
grep -q "FLASHTRAIN_NCCL_INCLUDE_DIR:PATH=/" "$BUILD/CMakeCache.txt" &&
  grep -q "FLASHTRAIN_TORCH_CUDA_LIBRARY:FILEPATH=/" "$BUILD/CMakeCache.txt" ||
  die "configure found no nccl.h or libtorch_cuda: flashtrain would build without NCCL (configure.log)"
note "build: $BUILD_S s"
FT="$REPO/$BUILD/trainer/flashtrain"

export NCCL_DEBUG=WARN  # NCCL's own warnings into the logs
# One line per run for the summary: name config mode steps exit seconds.
printf 'name\tconfig\tmode\tsteps\texit\tseconds\n' > "$OUT/runs.tsv"

# common_flags CONFIG NAME STEPS: sets FLAGS to the small-corpus overrides of
# experiments/lm/run_on_gpu.sh, without validation or checkpoints (timing only).
common_flags() {
  FLAGS=(--config "configs/$1.toml" --job.dump_folder="$RUNS/$2" --training.steps="$3"
    --training.device="$DEVICE" --checkpoint.enable=false --metrics.log_every=10
    --tokenizer.path="$CORPUS/tokenizer.model" --data.train_shards="$CORPUS/train_*.bin"
    --data.val_shards="$CORPUS/val_*.bin" --validation.every=0 --lr_scheduler.warmup_steps=20
    --parallelism.timeout_seconds=120 "${SHRINK[@]}")
}

# train NAME CONFIG MODE STEPS CAP [flags...]: one run, cut at CAP seconds or
# what the budget has left (SIGTERM; the metrics logged so far remain).
train() {
  local name=$1 config=$2 mode=$3 steps=$4 cap=$5
  shift 5
  local remaining
  remaining=$(( $(left) - 20 ))
  ((remaining < cap)) && cap=$remaining
  if ((cap < 25)); then
    note "$name: skipped (budget spent)"
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$config" "$mode" "$steps" skipped 0 >> "$OUT/runs.tsv"
    return
  fi
  common_flags "$config" "$name" "$steps"
  local flags=("${FLAGS[@]}" "$@")
  local cmd
  case $mode in
    1gpu) cmd=(env CUDA_VISIBLE_DEVICES=0 "$FT" "${flags[@]}") ;;
    nproc2) cmd=("$FT" --nproc 2 "${flags[@]}") ;;
    torchrun) cmd=("$PY" -m torch.distributed.run --standalone --nproc-per-node=2 --no-python "$FT" "${flags[@]}") ;;
  esac
  note "$name: ${cmd[*]} (cap ${cap} s)"
  echo "${cmd[*]}" > "$OUT/$name.log"
  local start rc
  start=$(date +%s.%N)
  timeout --signal=TERM --kill-after=20 "$cap" "${cmd[@]}" >> "$OUT/$name.log" 2>&1
  rc=$?
  local seconds
  seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  cp "$RUNS/$name/metrics.jsonl" "$OUT/$name.metrics.jsonl" 2>/dev/null || true
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$config" "$mode" "$steps" "$rc" "$seconds" >> "$OUT/runs.tsv"
  note "$name: exit $rc after $seconds s; $(grep -E '^step' "$OUT/$name.log" | tail -1)"
  ((rc == 0 || rc == 124)) || { tail -25 "$OUT/$name.log"; echo "(rank errors above; full log $OUT/$name.log)"; }
}

# --- (c) a killed rank ends the run: through the launcher, and on its own ----
# rank_pid PARENT RANK: the child of PARENT whose environment says RANK=<rank>.
rank_pid() {
  local child
  for child in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
    if tr '\0' '\n' < /proc/"$child"/environ 2>/dev/null | grep -qx "RANK=$2"; then echo "$child"; return; fi
  done
}
# wait_for_step LOG STEP TIMEOUT: until LOG shows progress line STEP.
wait_for_step() {
  local deadline=$(( $(date +%s) + $3 ))
  until grep -qE "^step +$2/" "$1" 2>/dev/null; do
    (( $(date +%s) > deadline )) && return 1
    sleep 0.5
  done
}
KILL_BOUND=30     # launcher: the ranks must be down this long after the kill
ORPHAN_BOUND=60   # no launcher: rank 0 alone must notice (peer check; else the 120 s timeout)
kill_tests() {
  kill_result="skipped"
  orphan_result="skipped"
  if (( $(left) > 45 )); then
    note "kill: --nproc 2 transformer, SIGKILL to rank 1 at step 10"
    common_flags transformer kill 100000
    "$FT" --nproc 2 "${FLAGS[@]}" --metrics.log_every=1 > "$OUT/kill.log" 2>&1 &
    launcher=$!
    if wait_for_step "$OUT/kill.log" 10 90; then
      victim=$(rank_pid "$launcher" 1)
      [[ -n $victim ]] || victim=0  # not found: the kill fails, and so does the check below
      t_kill=$(date +%s.%N)
      kill -9 "$victim"
      for _ in $(seq 1 $((KILL_BOUND * 10))); do kill -0 "$launcher" 2> /dev/null || break; sleep 0.1; done
      if kill -0 "$launcher" 2> /dev/null; then
        kill_result="FAIL: still running ${KILL_BOUND} s after killing rank 1"
        kill -9 -- "$launcher" 2> /dev/null
      fi
      wait "$launcher"; rc=$?
      took=$(awk -v a="$t_kill" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
      if [[ $kill_result == skipped ]]; then
        if ((rc != 0)) && grep -q "rank 1 (pid $victim) was killed by signal 9" "$OUT/kill.log"; then
          kill_result="pass: exit $rc ${took} s after the kill, rank 1 named"
        else
          kill_result="FAIL: exit $rc after ${took} s; log does not name rank 1"
        fi
      fi
    else
      kill_result="FAIL: never reached step 10"
      kill -TERM "$launcher" 2> /dev/null; wait "$launcher"
    fi
    note "kill: $kill_result"; grep -E "^flashtrain: " "$OUT/kill.log" | tail -5
  fi
  if (( $(left) > 45 )); then
    note "orphan: two hand-started ranks (no launcher), SIGKILL to rank 1 at step 10"
    port=$("$PY" -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
    common_flags transformer orphan 100000
    pids=()
    for rank in 0 1; do
      RANK=$rank LOCAL_RANK=$rank WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
        "$FT" "${FLAGS[@]}" --metrics.log_every=1 > "$OUT/orphan_rank$rank.log" 2>&1 &
      pids+=($!)
    done
    pid0=${pids[0]}
    pid1=${pids[1]}
    if wait_for_step "$OUT/orphan_rank0.log" 10 90; then
      t_kill=$(date +%s.%N)
      kill -9 "$pid1"
      for _ in $(seq 1 $((ORPHAN_BOUND * 10))); do kill -0 "$pid0" 2> /dev/null || break; sleep 0.1; done
      if kill -0 "$pid0" 2> /dev/null; then
        orphan_result="FAIL: rank 0 still running ${ORPHAN_BOUND} s after rank 1 died"
        kill -9 "$pid0"
      fi
      wait "$pid0"; rc=$?
      took=$(awk -v a="$t_kill" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
      if [[ $orphan_result == skipped ]]; then
        if ((rc != 0)) && grep -q "rank 1 (pid $pid1" "$OUT/orphan_rank0.log"; then
          orphan_result="pass: rank 0 exit $rc ${took} s after the kill, rank 1 named"
        else
          orphan_result="FAIL: rank 0 exit $rc after ${took} s without naming rank 1"
        fi
      fi
    else
      orphan_result="FAIL: never reached step 10"
      kill -9 "$pid0" "$pid1" 2> /dev/null
    fi
    wait 2> /dev/null
    note "orphan: $orphan_result"; grep -E "error" "$OUT/orphan_rank0.log" | tail -3
  fi
}

# --- (a) one GPU and (b) two ranks with the same global batch, (c) kills --------
# What the budget leaves after the build, shared out: the main runs get most
# (one GPU runs twice the work per GPU of a rank), the kill tests and the
# summary a fixed reserve, the short runs the rest.
SPAN=$(( $(left) - 90 ))
CAP_1GPU=$(( SPAN * 27 / 100 < 45 ? 45 : SPAN * 27 / 100 ))
CAP_NPROC2=$(( SPAN * 17 / 100 < 35 ? 35 : SPAN * 17 / 100 ))
CAP_SHORT=$(( SPAN * 6 / 100 < 30 ? 30 : SPAN * 6 / 100 ))
note "after the build: $(left) s left; caps ${CAP_1GPU} s (1 GPU), ${CAP_NPROC2} s (2 ranks), ${CAP_SHORT} s (short)"
train lstm_12head_1gpu lstm_12head 1gpu "$STEPS" "$CAP_1GPU"
train lstm_12head_nproc2 lstm_12head nproc2 "$STEPS" "$CAP_NPROC2"
kill_tests
train transformer_1gpu transformer 1gpu "$STEPS" "$CAP_1GPU"
train transformer_nproc2 transformer nproc2 "$STEPS" "$CAP_NPROC2"

# --- scaling at equal per-GPU work, then torchrun ------------------------------
for config in lstm_12head transformer; do
  train "${config}_scale2" "$config" nproc2 "$SHORT_STEPS" "$CAP_SHORT" --training.global_batch_size=$((2 * GLOBAL_BATCH))
done
if ((HAVE_TORCHRUN)); then
  train lstm_12head_torchrun lstm_12head torchrun "$STEPS" "$CAP_SHORT"
else
  note "torchrun: python3 -m torch.distributed.run not found; skipped"
fi

# --- summary ---------------------------------------------------------------------
note "summary"
KILL_RESULT="$kill_result" ORPHAN_RESULT="$orphan_result" BUILD_S="$BUILD_S" ELAPSED="$(elapsed)" \
  "$PY" - "$OUT" << 'PYEOF'
import json, os, statistics, sys

out = sys.argv[1]
runs = {}
with open(os.path.join(out, "runs.tsv")) as f:
    next(f)
    for line in f:
        name, config, mode, steps, rc, seconds = line.rstrip("\n").split("\t")
        runs[name] = {"config": config, "mode": mode, "steps": int(steps), "exit": rc, "seconds": float(seconds)}


def records(name):
    path = os.path.join(out, name + ".metrics.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [r for r in (json.loads(l) for l in f if l.strip()) if r.get("kind") == "train"]


def median(rs, key, skip=2):
    # The first logged windows hold start-up (kernel tuning, graph capture).
    values = [r[key] for r in rs[skip:] if r.get(key) is not None] or [r[key] for r in rs if r.get(key) is not None]
    return statistics.median(values) if values else None


for name, run in runs.items():
    rs = records(name)
    run["last_step"] = rs[-1]["step"] if rs else 0
    run["final_loss"] = rs[-1]["loss"] if rs else None
    for key in ("tokens_per_second", "comm_seconds", "comm_wait_seconds", "comm_overlap", "peak_memory_gib", "mfu"):
        run[key] = median(rs, key) if rs else None


def compare(a, b, max_step=None):
    la = {r["step"]: r["loss"] for r in records(a)}
    lb = {r["step"]: r["loss"] for r in records(b)}
    common = sorted(s for s in la if s in lb and (max_step is None or s <= max_step))
    if not common:
        return None
    diffs = [abs(la[s] - lb[s]) for s in common]
    tail = common[-5:]
    return {"steps": len(common), "last_common_step": common[-1], "max_abs_diff": max(diffs),
            "tail_mean_a": statistics.mean(la[s] for s in tail), "tail_mean_b": statistics.mean(lb[s] for s in tail),
            "tail_rel_diff": abs(statistics.mean(la[s] for s in tail) - statistics.mean(lb[s] for s in tail))
            / statistics.mean(la[s] for s in tail)}


summary = {"device": open(os.path.join(out, "device.txt")).read().strip(), "build_seconds": int(os.environ["BUILD_S"]),
           "total_seconds": int(os.environ["ELAPSED"]), "runs": runs, "comparisons": {}, "scaling": {},
           "kill_via_launcher": os.environ["KILL_RESULT"], "kill_without_launcher": os.environ["ORPHAN_RESULT"]}
for config in ("lstm_12head", "transformer"):
    c = compare(f"{config}_1gpu", f"{config}_nproc2")
    if c:
        # bf16 and another summation order: close, not bitwise.
        c["match"] = c["tail_rel_diff"] < 0.02
        c["bound"] = "mean loss of the last 5 log points within 2% (bf16 noise)"
        summary["comparisons"][f"{config}: 1gpu vs nproc2"] = c
    one, two = runs.get(f"{config}_1gpu", {}), runs.get(f"{config}_scale2", {})
    if one.get("tokens_per_second") and two.get("tokens_per_second"):
        ratio = two["tokens_per_second"] / one["tokens_per_second"]
        summary["scaling"][config] = {"tokens_per_second_1gpu": one["tokens_per_second"],
                                      "tokens_per_second_2gpu": two["tokens_per_second"],
                                      "ratio": ratio, "target": 1.9, "meets_target": ratio >= 1.9}
c = compare("lstm_12head_nproc2", "lstm_12head_torchrun", max_step=20)  # same schedule in the warm-up only
if c:
    c["match"] = c["max_abs_diff"] < 0.02
    c["bound"] = "|dloss| < 0.02 at every log point (same world, same data)"
    summary["comparisons"]["lstm_12head: nproc2 vs torchrun (warm-up steps)"] = c
with open(os.path.join(out, "summary.json"), "w") as f:
    json.dump(summary, f, indent=2)


def fmt(v, spec):
    return format(v, spec) if isinstance(v, (int, float)) else "-"


lines = ["", f"{'run':<24} {'exit':>5} {'step':>5} {'loss':>7} {'tok/s':>9} {'comm ms':>8} {'wait ms':>8} "
         f"{'overlap':>7} {'GiB':>6} {'s':>6}"]
for name, r in runs.items():
    lines.append(f"{name:<24} {r['exit']:>5} {r['last_step']:>5} {fmt(r['final_loss'], '7.3f'):>7} "
                 f"{fmt(r['tokens_per_second'], '9.0f'):>9} "
                 f"{fmt(r['comm_seconds'] and r['comm_seconds'] * 1e3, '8.1f'):>8} "
                 f"{fmt(r['comm_wait_seconds'] and r['comm_wait_seconds'] * 1e3, '8.1f'):>8} "
                 f"{fmt(r['comm_overlap'], '7.2f'):>7} {fmt(r['peak_memory_gib'], '6.1f'):>6} {r['seconds']:>6.0f}")
for what, c in summary["comparisons"].items():
    lines.append(f"{what}: {c['steps']} common log points to step {c['last_common_step']}, max |dloss| "
                 f"{c['max_abs_diff']:.4f}, last-5 mean {c['tail_mean_a']:.4f} vs {c['tail_mean_b']:.4f} "
                 f"-> {'match' if c['match'] else 'DIFFER'} (bound: {c['bound']})")
for config, s in summary["scaling"].items():
    lines.append(f"{config}: 2 GPUs / 1 GPU at equal per-GPU work = {s['ratio']:.2f}x "
                 f"(the target is >= 1.9: {'pass' if s['ratio'] >= 1.9 else 'BELOW'})")
lines.append(f"kill via launcher: {summary['kill_via_launcher']}")
lines.append(f"kill without launcher: {summary['kill_without_launcher']}")
lines.append(f"build {summary['build_seconds']} s, total {summary['total_seconds']} s; details in summary.json")
text = "\n".join(lines)
open(os.path.join(out, "summary.txt"), "a").write(text + "\n")
print(text)
PYEOF

#!/usr/bin/env bash
# Where one tensor-core kernel's warps wait, per SASS instruction: Nsight
# Compute's source counters (stall samples per PC) on one kernel of one shape
# (KERNEL = forward: the inference forward, recording: the forward that saves
# for the backward, backward), exported as CSV, and the instructions with the
# most samples printed. Prebuilt flashbench (scripts/pack_gpu_binaries.sh
# flashbench; carry build-bin).
#   SHAPE=16,1024,1,768 CELL=lstm KERNEL=forward bash experiments/flashbench/ncu_source.sh
source tests/gpu/torch_env.sh; export PATH=/usr/local/cuda/bin:$PATH
bash tests/gpu/run_prebuilt.sh flashbench --help >/dev/null 2>&1
FB=/tmp/flashtrain-bin/flashbench
SHAPE=${SHAPE:-16,1024,1,768}; CELL=${CELL:-lstm}; D=${SHAPE##*,}
KERNEL=${KERNEL:-forward}
case $CELL in lstm) CLASS=Lstm;; slstm) CLASS=Slstm;; gru) CLASS=Gru;; elman) CLASS=Elman;; esac
# The kernels' template arguments end <..., kResets, kSaves> (forward) and <..., kResets> (backward).
case $KERNEL in forward) KIND=forward; TAIL='\(bool\)0, \(bool\)0';; recording) KIND=forward; TAIL='\(bool\)0, \(bool\)1';;
  backward) KIND=backward; TAIL='\(bool\)0';; *) echo "KERNEL is forward, recording or backward, not $KERNEL"; exit 2;; esac
name="$OUT/ncu_source_${KERNEL}_${CELL}_${SHAPE//,/x}"
timeout 300 ncu --kernel-name-base demangled \
  -k regex:"tc_${KIND}_kernel<flashrnn::cells::${CLASS}, __nv_bfloat16, \\(int\\)${D},.*${TAIL}>" \
  --launch-skip 1 --launch-count 1 --section SourceCounters --section WarpStateStats -f -o "$name" \
  $FB --shape "$SHAPE" --cells "$CELL" --backends fused --baselines off --iters 2 --check off --out /tmp/x.json > "$name.log" 2>&1
ncu -i "$name.ncu-rep" --page source --csv --print-source sass > "$name.csv" 2>&1
python3 - "$name.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
head = next(i for i, r in enumerate(rows) if "Source" in r)
names, body = rows[head], rows[head + 1:]
src = names.index("Source")
col = next(i for i, n in enumerate(names) if n.startswith("Warp Stall Sampling (All"))
def num(v):
    try: return float(v.replace(",", ""))
    except ValueError: return 0.0
total = sum(num(r[col]) for r in body if len(r) > col)
top = sorted((r for r in body if len(r) > col), key=lambda r: -num(r[col]))[:25]
print(f"{total:.0f} stall samples; the 25 instructions with the most:")
for r in top: print(f"{100 * num(r[col]) / total:5.1f} %  {r[src][:110]}")
PY

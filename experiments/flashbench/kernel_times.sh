#!/usr/bin/env bash
# Every kernel of the fused backend's last forward+backward repetition at one
# shape, with its GPU time under Nsight Compute (gpu__time_duration; kernels
# serialised, so the sum is an upper bound of the pass): what besides the two
# persistent kernels a training step pays for (δR's GEMM, the δb sum, fills,
# casts). Prebuilt flashbench (scripts/pack_gpu_binaries.sh flashbench; carry
# build-bin). Writes $OUT/kernel_times_<cell>_<shape>.txt and prints a table.
#   SHAPES="16,1024,12,64 16,1024,3,256" CELLS=lstm,slstm bash experiments/flashbench/kernel_times.sh
source tests/gpu/torch_env.sh; export PATH=/usr/local/cuda/bin:$PATH
bash tests/gpu/run_prebuilt.sh flashbench --help >/dev/null 2>&1
FB=/tmp/flashtrain-bin/flashbench
SHAPES=${SHAPES:-16,1024,12,64}; CELLS=${CELLS:-lstm}
for shape in $SHAPES; do
  for cell in ${CELLS//,/ }; do
    log="$OUT/kernel_times_${cell}_${shape//,/x}.csv"
    timeout 300 ncu --csv --metrics gpu__time_duration.sum $FB --shape "$shape" --cells "$cell" \
      --backends fused --baselines off --check off --iters 2 --out /tmp/x.json > "$log" 2>/dev/null
    echo "== $cell $shape: the kernels after the last recording forward (us)"
    python3 - "$log" <<'PY'
import csv, re, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
head, rows = rows[0], rows[1:]
name, value = head.index("Kernel Name"), head.index("Metric Value")
kernels = [(r[name], float(r[value].replace(",", "")) / 1e3) for r in rows]
# The last repetition starts at the last recording forward (kSaves = true).
starts = [i for i, (k, _) in enumerate(kernels) if re.search(r"tc_forward_kernel<.*\(bool\)1>", k)]
last = kernels[starts[-1]:] if starts else kernels[-30:]
for k, us in last:
    print(f"{us:10.1f}  {k[:150]}")
print(f"{sum(us for _, us in last):10.1f}  total")
PY
  done
done

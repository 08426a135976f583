#!/usr/bin/env bash
# Nsight Compute on the 3x256 LSTM tensor-core kernels (a head split over a
# cluster of 4 CTAs): stall samples, instruction counts, launch and occupancy,
# forward and backward, into $OUT/ncu_{forward,backward}.txt; the top stalls
# printed. Prebuilt flashbench (scripts/pack_gpu_binaries.sh flashbench; carry
# build-bin). Session 6's output: results/kernel_probes/v8_ncu_*_lstm256.txt.
#   bash experiments/flashbench/ncu_cluster.sh
source tests/gpu/torch_env.sh; export PATH=/usr/local/cuda/bin:$PATH
bash tests/gpu/run_prebuilt.sh flashbench --help >/dev/null 2>&1
FB=/tmp/flashtrain-bin/flashbench
for k in forward backward; do
  timeout 150 ncu --kernel-name-base demangled -k regex:"tc_${k}_kernel<flashrnn::cells::Lstm, __nv_bfloat16, \\(int\\)256" \
    --launch-skip 1 --launch-count 1 --section WarpStateStats --section InstructionStats --section SchedulerStats --section LaunchStats --section Occupancy \
    --metrics regex:smsp__pcsamp_warps_issue_stalled_.* $FB --shape 16,1024,3,256 --cells lstm --backends fused --baselines off \
    --iters 2 --out /tmp/x.json > "$OUT/ncu_$k.txt" 2>&1
  echo "== $k"; grep -E "Executed Instructions  |Warp Cycles Per Issued|Duration|Cluster|smsp__pcsamp_warps_issue_stalled_[a-z_]+ " "$OUT/ncu_$k.txt" | awk '$NF+0 > 0' | sort -k3 -n -r | head -14
done

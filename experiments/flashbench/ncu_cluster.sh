#!/usr/bin/env bash
# Nsight Compute on the tensor-core kernels of one shape (default the 12x64
# LSTM; a head of 64 is a cluster of 2 CTAs on sm_90): stall samples,
# instruction counts, launch and occupancy of the recording forward (the one a
# backward follows) and the backward, into $OUT/ncu_{forward,backward}_*.txt;
# the top stalls printed. Prebuilt flashbench (scripts/pack_gpu_binaries.sh
# flashbench; carry build-bin).
#   SHAPE=16,1024,3,256 CELL=lstm bash experiments/flashbench/ncu_cluster.sh
source tests/gpu/torch_env.sh; export PATH=/usr/local/cuda/bin:$PATH
bash tests/gpu/run_prebuilt.sh flashbench --help >/dev/null 2>&1
FB=/tmp/flashtrain-bin/flashbench
SHAPE=${SHAPE:-16,1024,12,64}; CELL=${CELL:-lstm}; D=${SHAPE##*,}
case $CELL in lstm) CLASS=Lstm;; slstm) CLASS=Slstm;; gru) CLASS=Gru;; elman) CLASS=Elman;; esac
# The recording forward is the kernel whose last flag (kSaves) is 1.
for k in forward backward; do
  regex="tc_${k}_kernel<flashrnn::cells::${CLASS}, __nv_bfloat16, \\(int\\)${D},"
  [[ $k == forward ]] && regex="${regex}.*\\(bool\\)1>"
  log="$OUT/ncu_${k}_${CELL}_${SHAPE//,/x}.txt"
  timeout 150 ncu --kernel-name-base demangled -k regex:"$regex" \
    --launch-skip 1 --launch-count 1 --section WarpStateStats --section InstructionStats --section SchedulerStats --section LaunchStats --section Occupancy \
    --metrics regex:smsp__pcsamp_warps_issue_stalled_.* $FB --shape "$SHAPE" --cells "$CELL" --backends fused --baselines off \
    --iters 2 --breakdown on --out /tmp/x.json > "$log" 2>&1
  echo "== $k $CELL $SHAPE"; grep -E "Executed Instructions  |Warp Cycles Per Issued|Duration|Cluster|smsp__pcsamp_warps_issue_stalled_[a-z_]+ " "$log" | awk '$NF+0 > 0' | sort -k3 -n -r | head -14
done

#!/usr/bin/env bash
# The fused backend's head sweep and the 12x64 pass breakdown in one short run
# (prebuilt flashbench; carry build-bin), for comparing a kernel tiling against
# the last sweep: the 4-warps-per-CTA candidate was timed with it
# (results/kernel_probes/v9_candidate_cta_warps_4_heads_H100.json).
#   bash experiments/flashbench/tiling_probe.sh
RUN="bash tests/gpu/run_prebuilt.sh"
$RUN flashbench --sweep heads --cells lstm,slstm --backends fused --baselines off --iters 10 --out $OUT/heads.json 2>&1 | grep -v skipped | tail -24
$RUN flashbench --shape 16,1024,12,64 --cells lstm,slstm --backends fused --baselines off --iters 20 --breakdown on --out $OUT/b.json 2>&1 | tail -8

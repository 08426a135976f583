#!/usr/bin/env bash
# Device run for the cluster-split tensor-core kernels (prebuilt binaries from
# scripts/pack_gpu_binaries.sh flashrnn_ops_tests flashbench; carry build-bin):
# the fused GPU tests, compute-sanitizer on a cluster case, the head sweep
# with the fused backend, and (if build-bin/$OLD.xz is there) an A/B of the
# SHAPES (default 12x64) against that older build. Logs under $OUT.
# SANITIZE_FILTER: the gtest filter compute-sanitizer runs (default one cluster case).
#   bash experiments/flashbench/cluster_probe.sh [tests|sanitize|sweep|ab]...
set -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
OUT="${OUT:-/tmp/cluster_probe}"; mkdir -p "$OUT"
RUN="bash tests/gpu/run_prebuilt.sh"
parts=("$@"); [[ ${#parts[@]} -gt 0 ]] || parts=(tests sanitize sweep ab)
for part in "${parts[@]}"; do
  case "$part" in
    tests)
      timeout 300 $RUN flashrnn_ops_tests --gtest_filter='FusedCuda.*:*BackendsCudaTest*/fused' > "$OUT/tests.log" 2>&1
      echo "tests rc=$?"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|Failure|Expected|Which|error" "$OUT/tests.log" | head -30 ;;
    sanitize)
      source tests/gpu/torch_env.sh; export PATH=/usr/local/cuda/bin:$PATH
      for tool in memcheck racecheck; do
        timeout 200 compute-sanitizer --tool $tool --error-exitcode 1 /tmp/flashtrain-bin/flashrnn_ops_tests \
          --gtest_filter="${SANITIZE_FILTER:-FusedCuda.ClusterSplitHeadsShortSequences}" > "$OUT/sanitizer_$tool.log" 2>&1
        echo "compute-sanitizer $tool rc=$?: $(grep -m1 -E '(ERROR|RACECHECK) SUMMARY' "$OUT/sanitizer_$tool.log")"
      done ;;
    sweep)
      timeout 200 $RUN flashbench --sweep heads --cells lstm,slstm --backends fused,alternating --baselines on \
        --iters 10 --out "$OUT/heads.json" > "$OUT/heads.txt" 2>&1; echo "sweep rc=$?"
      grep -v skipped "$OUT/heads.txt" | tail -40 ;;
    ab)  # OLD: the older build in build-bin (default old/flashbench: PACK_DIR=build-bin/old
         # scripts/pack_gpu_binaries.sh flashbench at the older commit); SHAPES: B,T,N,D ...
      old=${OLD:-old/flashbench}
      [[ -f build-bin/$old.xz ]] || { echo "no build-bin/$old.xz"; continue; }
      for shape in ${SHAPES:-16,1024,12,64}; do
        name="ab_${old//\//_}_${shape//,/x}"
        timeout 300 python3 experiments/flashbench/ab.py --a "$RUN $old" --b "$RUN flashbench" --rounds ${ROUNDS:-2} \
          --out "$OUT/$name.json" -- --shape "$shape" --cells lstm,slstm --backends fused --baselines off \
          --breakdown on > "$OUT/$name.txt" 2>&1; echo "$name rc=$?"; tail -8 "$OUT/$name.txt"
      done ;;
  esac
done

#!/usr/bin/env bash
# One side of an A/B (ab.py) on a GPU machine, for builds too large to travel
# together in one device call: carry build-bin with this side's flashbench.xz
# and libflashrnn_ops.so.xz, run this, swap in the other side's and run it again at once
# (the same warm machine), then combine on any machine:
#   python3 experiments/flashbench/ab.py --a v16 --b v17 --a-runs v16_*.json --b-runs v17_*.json
# Each shape (SHAPES, B,T,N,D ...) runs ROUNDS times (default 2), lstm and
# sLSTM, fused backend, the breakdown passes. Writes SIDE.txt and SIDE.tgz (the
# JSON files SIDE_<shape>_<round>.json) under $OUT: few files come back.
#   bash experiments/flashbench/ab_side.sh SIDE
set -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
side="${1:?side name}"; OUT="${OUT:-/tmp/ab_side}"; mkdir -p "$OUT"
work=$(mktemp -d)
shapes=${SHAPES:-16,1024,1,768 8,1024,1,768 16,1024,1,512 16,1024,1,640 16,1024,3,256 16,1024,12,64}
for round in $(seq "${ROUNDS:-2}"); do
  for shape in $shapes; do
    timeout 120 bash tests/gpu/run_prebuilt.sh flashbench --shape "$shape" --cells lstm,slstm --backends fused \
      --baselines off --breakdown on --iters 10 --out "$work/${side}_${shape//,/x}_$round.json" >> "$work/$side.txt" 2>&1 ||
      echo "$side: $shape round $round failed (see $side.txt)"
  done
done
cp "$work/$side.txt" "$OUT/"
tar czf "$OUT/$side.tgz" -C "$work" --exclude "$side.txt" .
grep fused "$work/$side.txt"

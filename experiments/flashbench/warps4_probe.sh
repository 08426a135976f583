RUN="bash tests/gpu/run_prebuilt.sh"
$RUN flashbench --sweep heads --cells lstm,slstm --backends fused --baselines off --iters 10 --out $OUT/heads.json 2>&1 | grep -v skipped | tail -24
$RUN flashbench --shape 16,1024,12,64 --cells lstm,slstm --backends fused --baselines off --iters 20 --breakdown on --out $OUT/b.json 2>&1 | tail -8

#!/usr/bin/env python3
"""Training speed with few sequences in flight: the budget models
(experiments/lm/budget_models.sh) at long context and a small micro-batch,
the recurrent ones block after block (model.wavefront_chunks = 0) and as a
wavefront over time chunks (block l on chunk k while block l - 1 runs chunk
k + 1; models/src/wavefront.h), the Transformer beside them. Each run trains
--steps steps of --batch sequences of --T tokens (global batch = micro-batch:
no accumulation) on a corpus; tokens/s is the median of the logged windows
after the first --warmup steps.

    python3 experiments/lm/wavefront_speed.py [--flashtrain build/trainer/flashtrain]
        [--models lstm_12head,transformer] [--chunks 0,6,12] [--T 16384] [--batch 4]
        [--steps 12] [--warmup 4] [--corpus .data/corpus-small]
        [--out experiments/results/lm/wavefront_speed.json]

The chunk counts apply to the recurrent models; the Transformer runs once
(it has no recurrence to pipeline). Writes the JSON (one record per run: the
command, tokens/s, the windows it came from) and prints a table with each
run's speed over the Transformer's. Standard library only.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from generation_speed import ROOT, budget_model  # noqa: E402  the budget geometry, from budget_models.sh


def train(flashtrain, model, chunks, args, scratch):
    config, changes = budget_model(model)
    folder = os.path.join(scratch, f"{model}-w{chunks}")
    command = [flashtrain, "--config", config, *changes, f"--job.name={model}", f"--job.dump_folder={folder}",
               f"--training.steps={args.steps}", f"--training.device={args.device}", "--checkpoint.enable=false",
               f"--tokenizer.path={args.corpus}/tokenizer.model", f"--data.train_shards={args.corpus}/train_*.bin",
               f"--data.val_shards={args.corpus}/val_*.bin", f"--data.seq_len={args.T}",
               f"--training.global_batch_size={args.batch}", f"--training.local_batch_size={args.batch}",
               "--metrics.log_every=2", "--validation.every=0", f"--model.wavefront_chunks={chunks}"]
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    record = {"model": model, "wavefront_chunks": chunks, "command": " ".join(command[1:]), "status": run.returncode}
    metrics = os.path.join(folder, "metrics.jsonl")
    windows = []
    if os.path.exists(metrics):
        with open(metrics) as f:
            for line in f:
                r = json.loads(line)
                if r.get("kind") == "train" and r["step"] > args.warmup:
                    windows.append(r["tokens_per_second"])
    if run.returncode != 0 or not windows:
        record["error"] = (run.stderr or run.stdout).strip()[-2000:]
        return record
    record.update(tokens_per_second=statistics.median(windows), windows=windows)
    return record


def table(records):
    baseline = next((r.get("tokens_per_second") for r in records if r["model"] == "transformer"), None)
    lines = ["| model | wavefront chunks | tokens/s | × transformer |", "|---|---|---|---|"]
    for r in records:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['wavefront_chunks']} | failed: {r['error'].splitlines()[-1][:80]} | |")
            continue
        ratio = f"{r['tokens_per_second'] / baseline:.2f}" if baseline else "–"
        lines.append(f"| {r['model']} | {r['wavefront_chunks']} | {r['tokens_per_second']:,.0f} | {ratio} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--flashtrain", default=os.path.join(ROOT, "build", "trainer", "flashtrain"))
    parser.add_argument("--models", default="lstm_12head,transformer")
    parser.add_argument("--chunks", default="0,6,12", help="model.wavefront_chunks of the recurrent models")
    parser.add_argument("--T", type=int, default=16384)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--warmup", type=int, default=4, help="steps left out of the median")
    parser.add_argument("--corpus", default=".data/corpus-small", help="tokenizer.model, train_*.bin, val_*.bin")
    parser.add_argument("--device", default="cuda", help="training.device of the runs")
    parser.add_argument("--out", default=os.path.join(ROOT, "experiments", "results", "lm", "wavefront_speed.json"))
    args = parser.parse_args(argv)
    if args.steps <= args.warmup + 1:
        parser.error(f"--steps {args.steps} leaves no logged window after --warmup {args.warmup}")
    device = "cpu"
    if args.device != "cpu":
        device = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader", "-i", "0"],
                                capture_output=True, text=True).stdout.strip() or "unknown"
    chunk_counts = [int(v) for v in args.chunks.split(",") if v]
    records = []
    with tempfile.TemporaryDirectory() as scratch:
        for model in args.models.split(","):
            for chunks in (chunk_counts if model != "transformer" else [0]):
                records.append(train(args.flashtrain, model, chunks, args, scratch))
                print(table(records).splitlines()[-1], flush=True)
    result = {"command": "python3 experiments/lm/wavefront_speed.py " + " ".join(argv or sys.argv[1:]),
              "device": device, "T": args.T, "micro_batch": args.batch, "steps": args.steps, "runs": records}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f, indent=1)
    os.replace(tmp, args.out)
    print(f"\n{device}, T {args.T}, micro-batch {args.batch}\n" + table(records))
    return 0 if all("error" not in r for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())

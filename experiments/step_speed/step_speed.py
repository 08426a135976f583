#!/usr/bin/env python3
"""Training-step speed, eager against CUDA graphs (training.cuda_graph), side
by side on one GPU: each case runs `flashtrain` twice with the same config,
once with `--training.cuda_graph=off` and once with `on`, and reads the step
time from metrics.jsonl (the trainer's tokens/s, which counts training steps
only). Correctness first: both runs must log the same loss at step 1 (the same
weights and batch) and a lower loss at the end.

    python3 experiments/step_speed/step_speed.py --flashtrain build/trainer/flashtrain \\
        --out experiments/results/step_speed [--cases parity_plain,lstm_12head] [--steps 300]

Writes step_speed_<GPU>.json (every run's numbers) and step_speed_<GPU>.txt (a
table: ms per step and tokens/s, eager and graph, and the speed-up). The
language-model cases need the small corpus (.data/corpus-small, built by
scripts/setup.sh).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

TASK = ["--config", "configs/tasks_parity.toml", "--validation.every=0", "--checkpoint.enable=false",
        "--training.target_loss=0"]
SMALL_CORPUS = ["--tokenizer.path=.data/corpus-small/tokenizer.model",
                "--data.train_shards=.data/corpus-small/train_*.bin",
                "--data.val_shards=.data/corpus-small/val_*.bin",
                "--validation.every=0", "--checkpoint.enable=false"]

# name -> (flashtrain arguments, steps scale): one table of what is measured.
# The parity cases are 4 heads of 32 (the block geometry of the suite's block rows).
HEADS = ["--model.n_heads=4", "--model.head_dim=32"]
RESIDUAL = ["--model.structure=residual", *HEADS]
PLAIN = ["--model.structure=plain", *HEADS]
CASES = {
    "parity_2blocks": (TASK + RESIDUAL + ["--model.n_layers=2"], 1.0),
    "parity_1block": (TASK + RESIDUAL + ["--model.n_layers=1", "--model.ffn_factor=0"], 1.0),
    "parity_plain": (TASK + PLAIN + ["--model.n_layers=1"], 1.0),
    "parity_plain_2layers": (TASK + PLAIN + ["--model.n_layers=2"], 1.0),
    "lstm_12head": (["--config", "configs/lstm_12head.toml"] + SMALL_CORPUS, 0.1),
    "lstm_1head": (["--config", "configs/lstm_1head.toml"] + SMALL_CORPUS, 0.1),
    "transformer": (["--config", "configs/transformer.toml"] + SMALL_CORPUS, 0.1),
}


def read_records(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def run_case(flashtrain, args, steps, mode, folder):
    command = [flashtrain] + args + [f"--training.steps={steps}", "--metrics.log_every=10",
                                     f"--training.cuda_graph={mode}", f"--job.dump_folder={folder}"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"step_speed: {' '.join(command)} failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    train = [r for r in read_records(os.path.join(folder, "metrics.jsonl")) if r.get("kind") == "train"]
    tokens_per_step = train[-1]["tokens_seen"] / train[-1]["step"]
    # The first windows hold start-up, the warm-up steps and the capture.
    steady = [r["tokens_per_second"] for r in train if r["step"] >= min(30, steps // 2)]
    tokens_per_second = statistics.median(steady)
    return {"mode": mode, "steps": steps, "first_loss": train[0]["loss"], "last_loss": train[-1]["loss"],
            "tokens_per_step": tokens_per_step, "tokens_per_second": tokens_per_second,
            "ms_per_step": 1000.0 * tokens_per_step / tokens_per_second,
            "peak_memory_gib": max((r.get("peak_memory_gib", 0.0) for r in train), default=None),
            "log_tail": done.stdout.splitlines()[-3:]}


def gpu_name():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True).stdout
        return out.splitlines()[0].strip().replace(" ", "_") or "unknown"
    except (OSError, IndexError):
        return "unknown"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--flashtrain", default="build/trainer/flashtrain")
    parser.add_argument("--out", default="experiments/results/step_speed")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--steps", type=int, default=300, help="steps of a task case (LM cases: a tenth)")
    args = parser.parse_args()
    unknown = [c for c in args.cases.split(",") if c not in CASES]
    if unknown:
        sys.exit(f"step_speed: unknown cases {unknown}; known: {list(CASES)}")
    os.makedirs(args.out, exist_ok=True)
    gpu = gpu_name()
    results = []
    with tempfile.TemporaryDirectory() as scratch:
        for case in args.cases.split(","):
            flags, scale = CASES[case]
            steps = max(40, int(args.steps * scale))
            runs = {mode: run_case(args.flashtrain, flags, steps, mode, os.path.join(scratch, f"{case}-{mode}"))
                    for mode in ("off", "on")}
            eager, graph = runs["off"], runs["on"]
            same_start = abs(eager["first_loss"] - graph["first_loss"]) <= 1e-4 * abs(eager["first_loss"])
            both_learn = graph["last_loss"] < graph["first_loss"] and eager["last_loss"] < eager["first_loss"]
            results.append({"case": case, "arguments": flags, "eager": eager, "graph": graph,
                            "same_first_loss": same_start, "both_learn": both_learn,
                            "speedup": eager["ms_per_step"] / graph["ms_per_step"]})
            print(f"{case:22s} eager {eager['ms_per_step']:8.3f} ms  graph {graph['ms_per_step']:8.3f} ms  "
                  f"x{results[-1]['speedup']:.2f}  same start {same_start}  both learn {both_learn}", flush=True)
    with open(os.path.join(args.out, f"step_speed_{gpu}.json"), "w") as f:
        json.dump({"gpu": gpu, "command": " ".join(sys.argv), "results": results}, f, indent=1)
    lines = [f"training step, eager vs CUDA graph, {gpu.replace('_', ' ')}",
             "| case | tokens/step | eager ms/step | graph ms/step | speed-up | eager tok/s | graph tok/s | checks |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        e, g = r["eager"], r["graph"]
        ok = "ok" if r["same_first_loss"] and r["both_learn"] else "FAILED"
        lines.append(f"| {r['case']} | {e['tokens_per_step']:.0f} | {e['ms_per_step']:.3f} | {g['ms_per_step']:.3f} | "
                     f"{r['speedup']:.2f}x | {e['tokens_per_second']:.3g} | {g['tokens_per_second']:.3g} | {ok} |")
    with open(os.path.join(args.out, f"step_speed_{gpu}.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if all(r["same_first_loss"] and r["both_learn"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Training-step speed, eager against CUDA graphs (training.cuda_graph), side
by side: each case runs `flashtrain` with the same config once with
`--training.cuda_graph=off` and once with `on`, and reads the step time from
metrics.jsonl (the trainer's tokens/s, which counts training steps only).
With --nproc N (data parallel, one rank per GPU, each rank the one-GPU case's
batch) a third run puts the gradient all-reduce between two graphs instead of
inside one (`--parallelism.allreduce_in_graph=false`). Correctness first:
every run must log the same loss at step 1 (the same weights and batch) and a
lower loss at the end.

    python3 experiments/step_speed/step_speed.py --flashtrain build/trainer/flashtrain \\
        --out experiments/results/step_speed [--cases parity_plain,lstm_12head] [--steps 300] [--nproc 2]

Writes step_speed_<GPU>[_xN].json (every run's numbers) and .txt (a table: ms
per step and tokens/s of each mode, and the speed-up of the graph). The
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

# name -> (flashtrain arguments, steps scale, the config's global batch or
# None where it is the local batch times the ranks): one table of what is
# measured. The parity cases are a width of 128 in 4 heads of 32 (the block
# geometry of the suite's block rows).
HEADS = ["--model.dim=128", "--model.n_heads=4", "--model.head_dim=32"]
RESIDUAL = ["--model.structure=residual", *HEADS]
PLAIN = ["--model.structure=plain", *HEADS]
CASES = {
    "parity_2blocks": (TASK + RESIDUAL + ["--model.n_layers=2"], 1.0, None),
    "parity_1block": (TASK + RESIDUAL + ["--model.n_layers=1", "--model.ffn_factor=0"], 1.0, None),
    "parity_plain": (TASK + PLAIN + ["--model.n_layers=1"], 1.0, None),
    "parity_plain_2layers": (TASK + PLAIN + ["--model.n_layers=2"], 1.0, None),
    "lstm_12head": (["--config", "configs/lstm_12head.toml"] + SMALL_CORPUS, 0.1, 64),
    "lstm_1head": (["--config", "configs/lstm_1head.toml"] + SMALL_CORPUS, 0.1, 64),
    "transformer": (["--config", "configs/transformer.toml"] + SMALL_CORPUS, 0.1, 64),
}

# mode -> flashtrain arguments; "between" only with --nproc > 1.
MODES = {"eager": ["--training.cuda_graph=off"], "graph": ["--training.cuda_graph=on"],
         "between": ["--training.cuda_graph=on", "--parallelism.allreduce_in_graph=false"]}


def read_records(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def run_case(flashtrain, args, steps, mode, folder):
    command = [flashtrain] + args + MODES[mode] + [f"--training.steps={steps}", "--metrics.log_every=10",
                                                   f"--job.dump_folder={folder}"]
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
    parser.add_argument("--nproc", type=int, default=1, help="data-parallel ranks, one per GPU")
    args = parser.parse_args()
    unknown = [c for c in args.cases.split(",") if c not in CASES]
    if unknown:
        sys.exit(f"step_speed: unknown cases {unknown}; known: {list(CASES)}")
    os.makedirs(args.out, exist_ok=True)
    gpu = gpu_name()
    modes = ["eager", "graph"] + (["between"] if args.nproc > 1 else [])
    results = []
    with tempfile.TemporaryDirectory() as scratch:
        for case in args.cases.split(","):
            flags, scale, global_batch = CASES[case]
            if args.nproc > 1:
                flags = flags + ["--nproc", str(args.nproc)]
                if global_batch:
                    flags.append(f"--training.global_batch_size={global_batch * args.nproc}")
            steps = max(40, int(args.steps * scale))
            runs = {mode: run_case(args.flashtrain, flags, steps, mode, os.path.join(scratch, f"{case}-{mode}"))
                    for mode in modes}
            eager = runs["eager"]
            same_start = all(abs(r["first_loss"] - eager["first_loss"]) <= 1e-4 * abs(eager["first_loss"])
                             for r in runs.values())
            all_learn = all(r["last_loss"] < r["first_loss"] for r in runs.values())
            results.append({"case": case, "arguments": flags, "nproc": args.nproc, "runs": runs,
                            "same_first_loss": same_start, "all_learn": all_learn,
                            "speedup": {m: eager["ms_per_step"] / runs[m]["ms_per_step"] for m in modes[1:]}})
            print(f"{case:22s} " + "  ".join(f"{m} {runs[m]['ms_per_step']:8.3f} ms" for m in modes) +
                  f"  same start {same_start}  all learn {all_learn}", flush=True)
    suffix = f"_x{args.nproc}" if args.nproc > 1 else ""
    with open(os.path.join(args.out, f"step_speed_{gpu}{suffix}.json"), "w") as f:
        json.dump({"gpu": gpu, "nproc": args.nproc, "command": " ".join(sys.argv), "results": results}, f, indent=1)
    where = gpu.replace("_", " ") + (f", {args.nproc} ranks (one per GPU)" if args.nproc > 1 else "")
    names = {"eager": "eager", "graph": "graph", "between": "all-reduce between graphs"}
    lines = [f"training step, eager vs CUDA graph, {where}",
             "| case | tokens/step | " + " | ".join(f"{names[m]} ms/step" for m in modes) + " | " +
             " | ".join(f"{names[m]} speed-up" for m in modes[1:]) + " | " +
             " | ".join(f"{names[m]} tok/s" for m in modes) + " | checks |",
             "|---|---|" + "---|" * (3 * len(modes) - 1) + "---|"]
    for r in results:
        runs = r["runs"]
        ok = "ok" if r["same_first_loss"] and r["all_learn"] else "FAILED"
        lines.append(f"| {r['case']} | {runs['eager']['tokens_per_step']:.0f} | " +
                     " | ".join(f"{runs[m]['ms_per_step']:.3f}" for m in modes) + " | " +
                     " | ".join(f"{r['speedup'][m]:.2f}x" for m in modes[1:]) + " | " +
                     " | ".join(f"{runs[m]['tokens_per_second']:.3g}" for m in modes) + f" | {ok} |")
    with open(os.path.join(args.out, f"step_speed_{gpu}{suffix}.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if all(r["same_first_loss"] and r["all_learn"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The state-tracking suite of ../shared/TASKS.md (issue 10, section 3): every
task × model × seed through `flashtrain`, each scored by the scaled accuracy of
its last validation (train lengths 3..40, test 40..256, configs/tasks_parity.toml
with overrides), collected into one JSON and a table (mean ± spread over seeds).

    python3 experiments/tasks/run_suite.py --out DIR [--tasks parity,s5]
        [--models lstm,slstm,transformer,linear_scan] [--seeds 0,1,2]
        [--steps 1000] [--flashtrain build/trainer/flashtrain]
        [--jobs 1] [--gpus 0,1] [--deadline SECONDS] [--resume-from FILE]
        [-- extra overrides...]

Runs already finished in DIR (a metrics file with a validation record at the
last step) are not run again, so an interrupted suite continues where it
stopped; runs are named task-model-seed, so other settings need another DIR.
--resume-from takes a validation_records.jsonl of an earlier suite (what
experiments/results/tasks/*/ keep) and counts its finished runs as done.
--jobs runs that many at once (the models are small: one GPU holds several),
spread over --gpus through CUDA_VISIBLE_DEVICES; after --deadline seconds no
new run starts, and the ones not run are reported as such (run again to finish).
"""
import argparse
import concurrent.futures
import json
import os
import queue
import statistics
import subprocess
import sys
import threading
import time

TASKS = ["parity", "even_pairs", "cycle_navigation", "modular_arithmetic",
         "modular_arithmetic_brackets", "majority", "majority_count", "s5", "z60"]
MODELS = ["lstm", "slstm", "transformer", "linear_scan"]


def last_validation(metrics_path):
    """(step, scaled_accuracy) of the last validation record, or None."""
    if not os.path.exists(metrics_path):
        return None
    found = None
    with open(metrics_path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            record = json.loads(line)
            if record.get("kind") == "val" and record.get("scaled_accuracy") is not None:
                found = (record["step"], record["scaled_accuracy"])
    return found


def seed_finished_runs(out, records_path):
    """Writes runs/<name>/metrics.jsonl for each run of `records_path` (one JSON
    object per line: run, final_train_loss, validation records) that DIR lacks,
    so run_one() finds it finished."""
    seeded = 0
    with open(records_path) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                name, validation = record["run"], record["validation"]
            except (json.JSONDecodeError, KeyError) as error:
                sys.exit(f"run_suite: {records_path}:{number}: not a run record ({error})")
            metrics = os.path.join(out, "runs", name, "metrics.jsonl")
            if os.path.exists(metrics):
                continue
            os.makedirs(os.path.dirname(metrics), exist_ok=True)
            with open(metrics, "w") as m:
                for v in validation:
                    m.write(json.dumps(v) + "\n")
            seeded += 1
    return seeded


def run_one(args, task, model, seed, extra, gpu=None, deadline=None):
    folder = os.path.join(args.out, "runs", f"{task}-{model}-seed{seed}")
    metrics = os.path.join(folder, "metrics.jsonl")
    done = last_validation(metrics)
    if done and done[0] >= args.steps:
        return done[1], "cached"
    if deadline is not None and time.monotonic() > deadline:
        return None, "not run (deadline)"
    command = [args.flashtrain, "--config", "configs/tasks_parity.toml",
               f"--data.task={task}", f"--model.kind={model}", f"--training.seed={seed}",
               f"--training.steps={args.steps}", f"--validation.every={args.steps}",
               f"--job.dump_folder={folder}", "--checkpoint.interval=0"] + extra
    os.makedirs(folder, exist_ok=True)
    env = dict(os.environ)
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpu
    with open(os.path.join(folder, "log.txt"), "w") as log:
        status = subprocess.call(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    if status != 0:
        return None, f"exit {status} (see {folder}/log.txt)"
    done = last_validation(metrics)
    return (done[1], "ran") if done else (None, "no validation record")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="folder for runs/, suite.json")
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--flashtrain", default="build/trainer/flashtrain")
    parser.add_argument("--jobs", type=int, default=1, help="runs at once")
    parser.add_argument("--gpus", default="", help="CUDA devices to spread the runs over, e.g. 0,1,2")
    parser.add_argument("--deadline", type=float, default=0, help="seconds after which no run starts")
    parser.add_argument("--resume-from", default="", help="an earlier suite's validation_records.jsonl")
    parser.add_argument("extra", nargs="*", help="more --section.key=value overrides (after --)")
    args = parser.parse_args()
    if not os.path.exists(args.flashtrain):
        sys.exit(f"run_suite: no flashtrain at {args.flashtrain} (build it, or pass --flashtrain)")
    for name, known in (("tasks", TASKS), ("models", MODELS)):
        unknown = [v for v in getattr(args, name).split(",") if v not in known]
        if unknown:
            sys.exit(f"run_suite: unknown {name} {unknown}; known: {known}")

    seeds = [int(s) for s in args.seeds.split(",")]
    if args.resume_from:
        print(f"run_suite: {seed_finished_runs(args.out, args.resume_from)} finished runs from {args.resume_from}")
    if args.jobs < 1:
        sys.exit(f"run_suite: --jobs must be >= 1, got {args.jobs}")
    deadline = time.monotonic() + args.deadline if args.deadline > 0 else None
    # One token per concurrent run, naming the GPU it may use.
    gpus = [g for g in args.gpus.split(",") if g] or [None]
    tokens = queue.Queue()
    for i in range(args.jobs):
        tokens.put(gpus[i % len(gpus)])

    print_lock = threading.Lock()  # whole lines: print() from threads interleaves

    def job(task, model, seed):
        gpu = tokens.get()
        try:
            score, how = run_one(args, task, model, seed, args.extra, gpu, deadline)
        finally:
            tokens.put(gpu)
        with print_lock:
            print(f"{task:28s} {model:12s} seed {seed}: "
                  f"{'-' if score is None else f'{score:.3f}'} ({how})", flush=True)
        return score, how

    grid = [(t, m, s) for t in args.tasks.split(",") for m in args.models.split(",") for s in seeds]
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        outcomes = dict(zip(grid, pool.map(lambda key: job(*key), grid)))
    results = {}
    for task in args.tasks.split(","):
        for model in args.models.split(","):
            runs = [outcomes[(task, model, seed)] for seed in seeds]
            scores = [score for score, _ in runs if score is not None]
            results.setdefault(task, {})[model] = {
                "scores": scores,
                "mean": statistics.mean(scores) if scores else None,
                "spread": (max(scores) - min(scores)) / 2 if scores else None,
                "failed_runs": sum(1 for score, how in runs if score is None and not how.startswith("not run")),
                "not_run": sum(1 for _, how in runs if how.startswith("not run"))}

    suite = {"command": " ".join(sys.argv), "steps": args.steps, "seeds": seeds,
             "metric": "scaled accuracy of the last validation (0 = chance, 1 = perfect), "
                       "train lengths 3..40, test 40..256",
             "results": results}
    path = os.path.join(args.out, "suite.json")
    with open(path + ".tmp", "w") as f:
        json.dump(suite, f, indent=1)
    os.replace(path + ".tmp", path)
    models = args.models.split(",")
    print("\n" + f"{'task':28s}" + "".join(f"{m:>18s}" for m in models))
    for task, row in results.items():
        cells = []
        for m in models:
            r = row[m]
            if r["mean"] is None:
                cells.append("not run" if r["not_run"] else "failed")
            else:
                missing = len(seeds) - len(r["scores"])
                cells.append(f"{r['mean']:.2f} ± {r['spread']:.2f}" + (f" ({len(r['scores'])})" if missing else ""))
        print(f"{task:28s}" + "".join(f"{c:>18s}" for c in cells))
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Every config in configs/ trained a few steps at data.seq_len 1024, 4096 and
16384 with its own batch settings (training.local_batch_size = auto,
training.cuda_graph = auto where the config says so), on the small offline
corpus (.data/corpus-small, what scripts/setup.sh builds); a task config once,
its lengths being its own. One run per GPU at a time. For each run: the exit
status, the micro-batch auto chose and its probe line, the last progress
line's tokens/s and mem, and every fallback the trainer announced (a capture
or a step out of memory, a validation split smaller than one batch). Writes
config_matrix.json and config_matrix.txt into --out, keeping the runs of an
earlier invocation there that this one did not repeat (so the matrix can be
run a few configs at a time).

    python3 experiments/lm/config_matrix.py --flashtrain build/trainer/flashtrain
        [--gpus 0,1] [--steps 20] [--seq-lens 1024,4096,16384] [--configs lstm_12head,...]
        [--out experiments/results/lm]
"""
import argparse
import glob
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(REPO, ".data", "corpus-small")
# Lines of the trainer's log a reader of the matrix needs.
FALLBACK = re.compile(r"^(?!local batch:).*(out of memory|runs eagerly|validation: data\.val_shards holds)")
PROGRESS = re.compile(r"step\s+(\d+)/\d+.*?([\d.]+[kM]?) tok/s(?:.*?mem ([\d.]+) GiB)?")


def is_task_config(path):
    with open(path) as f:
        return re.search(r'^\s*task\s*=\s*"\w', f.read(), re.M) is not None


def runs_of(configs, seq_lens, steps, root):
    runs = []
    for name in configs:
        path = os.path.join(REPO, "configs", name + ".toml")
        lengths = [None] if is_task_config(path) else seq_lens
        for T in lengths:
            run = f"{name}-T{T}" if T else name
            flags = [f"--training.steps={steps}", f"--job.dump_folder={os.path.join(root, run)}",
                     "--checkpoint.resume=none"]
            if T:
                flags += [f"--data.seq_len={T}", f"--tokenizer.path={CORPUS}/tokenizer.model",
                          f"--data.train_shards={CORPUS}/train_*.bin", f"--data.val_shards={CORPUS}/val_*.bin"]
            runs.append({"run": run, "config": f"configs/{name}.toml", "seq_len": T, "flags": flags})
    return runs


def summarize(run, log_text, status, seconds):
    lines = log_text.splitlines()
    auto = next((l for l in lines if l.startswith("local batch:")), "")
    progress = [m for m in (PROGRESS.search(l) for l in lines) if m]
    last = progress[-1] if progress else None
    errors = [l for l in lines if l.startswith(("error", "flashtrain:")) or "Error" in l][-3:]
    return dict(run, exit=status, seconds=round(seconds, 1), local_batch=auto,
                last_step=int(last.group(1)) if last else 0, tokens_per_second=last.group(2) if last else "",
                mem_gib=float(last.group(3)) if last and last.group(3) else None,
                fallbacks=[l.strip() for l in lines if FALLBACK.search(l)], errors=errors)


def short(line):
    """A fallback line as the table shows it."""
    m = re.match(r"validation: data\.val_shards holds (\d+) windows.*each validation takes (\d+)", line)
    return f"validation on all {m.group(1)} windows" if m else line


def write_table(out):
    """config_matrix.txt from config_matrix.json in `out`; returns the text."""
    with open(os.path.join(out, "config_matrix.json")) as f:
        matrix = json.load(f)
    table = [f"{matrix['steps']} steps of each config on one {matrix['device']} (its own batch settings; "
             f"small offline corpus)",
             f"{'run':20} {'exit':>4} {'micro-batch':>11} {'tok/s':>8} {'mem GiB':>8}  fallbacks"]
    for r in matrix["runs"]:
        batch = re.search(r"auto -> (\d+)", r["local_batch"])
        fallbacks = [short(l) for l in r["fallbacks"] if not l.startswith("local batch:")]
        table.append(f"{r['run']:20} {r['exit']:>4} {batch.group(1) if batch else 'fixed':>11} "
                     f"{r['tokens_per_second']:>8} {r['mem_gib'] if r['mem_gib'] is not None else '-':>8}  "
                     f"{'; '.join(fallbacks) or '-'}")
    text = "\n".join(table) + "\n"
    with open(os.path.join(out, "config_matrix.txt"), "w") as f:
        f.write(text)
    return text


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--flashtrain", default=os.path.join(REPO, "build", "trainer", "flashtrain"))
    parser.add_argument("--gpus", default="0")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--seq-lens", default="1024,4096,16384")
    parser.add_argument("--configs", default=",".join(sorted(
        os.path.basename(p)[:-5] for p in glob.glob(os.path.join(REPO, "configs", "*.toml")))))
    parser.add_argument("--root", default="/tmp/flashtrain-config-matrix", help="the runs' dump folders")
    parser.add_argument("--out", default=os.path.join(REPO, "experiments", "results", "lm"))
    parser.add_argument("--report-only", action="store_true", help="rewrite the table from --out's JSON")
    args = parser.parse_args(argv)
    if args.report_only:
        print(write_table(args.out))
        return 0
    if not os.path.isfile(os.path.join(CORPUS, "tokenizer.model")):
        sys.exit(f"config_matrix: {CORPUS} missing (scripts/setup.sh builds it)")
    runs = runs_of([c for c in args.configs.split(",") if c], [int(t) for t in args.seq_lens.split(",")],
                   args.steps, args.root)
    todo, results = queue.Queue(), []
    for r in runs:
        todo.put(r)

    def worker(gpu):
        while True:
            try:
                run = todo.get_nowait()
            except queue.Empty:
                return
            started = time.time()
            done = subprocess.run([args.flashtrain, "--config", os.path.join(REPO, run["config"]), *run["flags"]],
                                  cwd=REPO, env={**os.environ, "CUDA_VISIBLE_DEVICES": gpu},
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            result = summarize(run, done.stdout, done.returncode, time.time() - started)
            results.append(result)
            print(f"{run['run']}: exit {done.returncode}, {result['local_batch'][:90]}, "
                  f"{result['tokens_per_second']} tok/s, mem {result['mem_gib']} GiB", flush=True)
            with open(os.path.join(args.root, run["run"] + ".log"), "w") as f:
                f.write(done.stdout)

    os.makedirs(args.root, exist_ok=True)
    threads = [threading.Thread(target=worker, args=(g,)) for g in args.gpus.split(",")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Runs of an earlier invocation into the same --out (other configs) are kept.
    earlier = os.path.join(args.out, "config_matrix.json")
    if os.path.isfile(earlier):
        with open(earlier) as f:
            previous = json.load(f)
        if previous.get("steps") == args.steps:
            names = {r["run"] for r in results}
            results += [r for r in previous["runs"] if r["run"] not in names]
    results.sort(key=lambda r: (r["config"], r["seq_len"] or 0))
    import torch  # the GPU's name, as the other experiments record it
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "config_matrix.json.tmp"), "w") as f:
        json.dump({"device": device, "steps": args.steps, "command": "python3 experiments/lm/config_matrix.py " + " ".join(sys.argv[1:]), "runs": results}, f,
                  indent=1)
    os.replace(os.path.join(args.out, "config_matrix.json.tmp"), os.path.join(args.out, "config_matrix.json"))
    print(write_table(args.out))
    return 0 if all(r["exit"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())

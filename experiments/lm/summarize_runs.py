"""Summarises the runs of run_on_gpu.sh: one record per config from its
metrics file and log, written as JSON and printed as a table.

    python3 experiments/lm/summarize_runs.py OUT_DIR CONFIG... [--corpus NAME]

Reads OUT_DIR/<config>.metrics.jsonl (the trainer's JSON lines) and
OUT_DIR/<config>.log; writes OUT_DIR/summary.json. tokens/s and MFU are the
medians of the progress lines after the first (step 1 includes start-up);
peak memory is the largest per-interval peak. Standard library only.
"""
import argparse
import json
import os
import re
import statistics
import sys


def read_jsonl(path):
    records = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{number}: not JSON ({error})")
    return records


def median_after_first(values):
    values = [v for v in values if v is not None]
    if len(values) > 1:
        values = values[1:]
    return statistics.median(values) if values else None


def summarize(out_dir, config):
    record = {"config": config, "status": "ok", "steps": None, "tokens_per_second": None, "mfu": None,
              "peak_memory_gib": None, "final_train_loss": None, "final_val_loss": None, "wall_seconds": None}
    log_path = os.path.join(out_dir, f"{config}.log")
    if os.path.isfile(log_path):
        with open(log_path) as f:
            log = f.read()
        if m := re.search(rf"^{re.escape(config)}: exit status (\d+)", log, re.M):
            record["status"] = f"failed (exit status {m.group(1)})"
        if m := re.search(rf"^{re.escape(config)}: (\d+) s$", log, re.M):
            record["wall_seconds"] = int(m.group(1))
    metrics_path = os.path.join(out_dir, f"{config}.metrics.jsonl")
    if not os.path.isfile(metrics_path):
        record["status"] = "no metrics" if record["status"] == "ok" else record["status"]
        return record
    records = read_jsonl(metrics_path)
    train = [r for r in records if r.get("kind") == "train"]
    val = [r for r in records if r.get("kind") == "val"]
    if train:
        record["steps"] = train[-1]["step"]
        record["final_train_loss"] = train[-1]["loss"]
        record["tokens_per_second"] = median_after_first([r.get("tokens_per_second") for r in train])
        record["mfu"] = median_after_first([r.get("mfu") for r in train])
        memory = [r["peak_memory_gib"] for r in train if r.get("peak_memory_gib") is not None]
        record["peak_memory_gib"] = max(memory) if memory else None
    if val:
        record["final_val_loss"] = val[-1]["loss"]
    return record


def fmt(value, pattern):
    return "-" if value is None else pattern.format(value)


def table(records):
    header = f"{'config':<16} {'status':<10} {'steps':>6} {'tok/s':>10} {'MFU':>7} {'mem GiB':>8} " \
             f"{'train loss':>10} {'val loss':>9} {'wall s':>7}"
    lines = [header, "-" * len(header)]
    for r in records:
        status = "ok" if r["status"] == "ok" else "FAILED" if r["status"].startswith("failed") else r["status"]
        lines.append(f"{r['config']:<16} {status:<10} {fmt(r['steps'], '{}'):>6} "
                     f"{fmt(r['tokens_per_second'], '{:,.0f}'):>10} "
                     f"{fmt(None if r['mfu'] is None else 100 * r['mfu'], '{:.1f}%'):>7} "
                     f"{fmt(r['peak_memory_gib'], '{:.2f}'):>8} {fmt(r['final_train_loss'], '{:.4f}'):>10} "
                     f"{fmt(r['final_val_loss'], '{:.4f}'):>9} {fmt(r['wall_seconds'], '{}'):>7}")
    return "\n".join(lines)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir")
    parser.add_argument("configs", nargs="+")
    parser.add_argument("--corpus", help="the corpus the runs trained on")
    args = parser.parse_args(argv)
    device = None
    device_path = os.path.join(args.out_dir, "device.txt")
    if os.path.isfile(device_path):
        with open(device_path) as f:
            device = f.read().strip() or None
    try:
        runs = [summarize(args.out_dir, config) for config in args.configs]
    except ValueError as error:
        print(f"summarize_runs.py: {error}", file=sys.stderr)
        return 2
    summary = {"device": device, "corpus": args.corpus, "runs": runs}
    with open(os.path.join(args.out_dir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
    print(f"device: {device or '?'}; corpus: {args.corpus or '?'}; {args.out_dir}/summary.json")
    print(table(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

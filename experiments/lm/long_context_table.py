"""Joins long_context.sh's runs: BASE/T<T>/summary.json (summarize_runs.py, one
per sequence length) into BASE/long_context.json and a table of tokens/s (and
its ratio to the Transformer's at the same T), peak memory and validation loss.

    python3 experiments/lm/long_context_table.py BASE [--tokens 262144]

Standard library only.
"""
import argparse
import json
import os
import re
import sys


def load(base):
    """{T: summary} for every BASE/T<T>/summary.json, in increasing T."""
    found = {}
    for name in os.listdir(base):
        m = re.fullmatch(r"T(\d+)", name)
        path = os.path.join(base, name, "summary.json")
        if m and os.path.isfile(path):
            with open(path) as f:
                found[int(m.group(1))] = json.load(f)
    return dict(sorted(found.items()))


def rows(summaries):
    """One row per (model, T): the run's numbers and its tokens/s over the Transformer's."""
    out = []
    for T, summary in summaries.items():
        runs = {r["config"]: r for r in summary["runs"]}
        baseline = (runs.get("transformer") or {}).get("tokens_per_second")
        for name, r in runs.items():
            speed = r.get("tokens_per_second")
            out.append({"model": name, "T": T, "status": r["status"], "tokens_per_second": speed,
                        "vs_transformer": speed / baseline if speed and baseline else None,
                        "peak_memory_gib": r.get("peak_memory_gib"), "final_val_loss": r.get("final_val_loss"),
                        "steps": r.get("steps"), "device": summary.get("device")})
    return out


def table(records, lengths):
    def cell(r):
        if r is None:
            return "–"
        if r["status"] != "ok" or r["tokens_per_second"] is None:
            return r["status"]
        ratio = "" if r["vs_transformer"] is None or r["model"] == "transformer" else f" ({r['vs_transformer']:.2f}×)"
        memory = "" if r["peak_memory_gib"] is None else f", {r['peak_memory_gib']:.0f} GiB"
        loss = "" if r["final_val_loss"] is None else f", val {r['final_val_loss']:.3f}"
        return f"{r['tokens_per_second'] / 1e3:,.0f}k{ratio}{memory}{loss}"
    models = list(dict.fromkeys(r["model"] for r in records))
    by = {(r["model"], r["T"]): r for r in records}
    lines = ["| tokens/s | " + " | ".join(f"T {T}" for T in lengths) + " |", "|---" * (len(lengths) + 1) + "|"]
    for m in models:
        lines.append(f"| {m} | " + " | ".join(cell(by.get((m, T))) for T in lengths) + " |")
    return "\n".join(lines)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base")
    parser.add_argument("--tokens", type=int, default=262144, help="tokens a step (for the record)")
    args = parser.parse_args(argv)
    summaries = load(args.base)
    if not summaries:
        print(f"long_context_table.py: no T<T>/summary.json under {args.base}", file=sys.stderr)
        return 2
    records = rows(summaries)
    result = {"tokens_per_step": args.tokens, "lengths": list(summaries), "runs": records}
    path = os.path.join(args.base, "long_context.json")
    with open(path + ".tmp", "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)
    print(f"{path}: {args.tokens:,} tokens a step")
    print(table(records, list(summaries)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

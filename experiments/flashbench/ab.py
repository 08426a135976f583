"""A/B timing of two flashbench executables in one GPU run (kernel work).

    python3 experiments/flashbench/ab.py --a OLD --b NEW [--rounds 2] [--out ab.json] \
        -- --shape 16,1024,12,64 --cells lstm,slstm --backends fused --breakdown on

Runs A, B, A, B, ... (`rounds` of each, interleaved so that clock and thermal
drift hit both alike) with the same flashbench arguments, each writing its own
JSON, then reports per case (cell, backend, B, T, N, D, pass) the median over
rounds of each side's median ms, the ratio B / A, and each side's largest
relative error against float64. A case missing on one side is reported, not
dropped. Writes --out (JSON) and prints a table. An executable may be a path or
a command (e.g. "bash tests/gpu/run_prebuilt.sh flashbench_v6").

Where the two executables do not fit one device call (its transfer limit), run
each side in its own call, back to back on the same warm machine
(ab_side.sh), and combine their JSON files here:

    python3 experiments/flashbench/ab.py --a v16 --b v17 --a-runs v16_*.json --b-runs v17_*.json
"""
import argparse
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import tempfile

CASE_KEYS = ("cell", "backend", "B", "T", "N", "D", "pass")


def run_flashbench(command, args, out_path):
    """One flashbench run; returns its records. Exits naming the command on failure."""
    argv = shlex.split(command) + list(args) + ["--out", out_path]
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"ab: `{' '.join(argv)}` exited {done.returncode}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    with open(out_path) as f:
        return json.load(f)["records"]


def load_records(path):
    """The records of one flashbench JSON file. Exits naming the file if it is not one."""
    try:
        with open(path) as f:
            return json.load(f)["records"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"ab: {path} is not a flashbench JSON file: {e}")


def combine(runs_a, runs_b):
    """Per case: medians over rounds, the ratio b / a and the worst errors."""
    cases = {}
    for side, runs in (("a", runs_a), ("b", runs_b)):
        for records in runs:
            for r in records:
                case = cases.setdefault(tuple(r[k] for k in CASE_KEYS), {"a": [], "b": [], "err_a": [], "err_b": []})
                case[side].append(r["median_ms"])
                if r.get("rel_error") is not None and not math.isnan(r["rel_error"]):
                    case["err_" + side].append(r["rel_error"])
    rows = []
    for key, c in cases.items():
        a = statistics.median(c["a"]) if c["a"] else None
        b = statistics.median(c["b"]) if c["b"] else None
        rows.append({**dict(zip(CASE_KEYS, key)), "a_ms": a, "b_ms": b,
                     "a_runs": c["a"], "b_runs": c["b"],
                     "ratio_b_over_a": b / a if a and b else None,
                     "a_max_rel_error": max(c["err_a"]) if c["err_a"] else None,
                     "b_max_rel_error": max(c["err_b"]) if c["err_b"] else None})
    return rows


def render(rows, a, b):
    fmt = lambda v, p: "-" if v is None else p.format(v)  # noqa: E731
    lines = [f"A = {a}", f"B = {b}",
             f"{'cell':6s} {'backend':12s} {'B':>4s} {'T':>5s} {'NxD':>7s} {'pass':8s} {'A ms':>8s} {'B ms':>8s} {'B/A':>6s}"]
    for r in rows:
        lines.append(f"{r['cell']:6s} {r['backend']:12s} {r['B']:>4d} {r['T']:>5d} {str(r['N']) + 'x' + str(r['D']):>7s} "
                     f"{r['pass']:8s} {fmt(r['a_ms'], '{:.3f}'):>8s} {fmt(r['b_ms'], '{:.3f}'):>8s} "
                     f"{fmt(r['ratio_b_over_a'], '{:.3f}'):>6s}")
    return "\n".join(lines)


def main(argv):
    if "--" in argv:
        split = argv.index("--")
        own, bench_args = argv[:split], argv[split + 1:]
    else:
        own, bench_args = argv, []
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--a", required=True, help="the baseline flashbench (path or command; with --a-runs a label)")
    parser.add_argument("--b", required=True, help="the candidate flashbench (path or command; with --b-runs a label)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", default="ab.json")
    parser.add_argument("--a-runs", nargs="+", metavar="JSON", help="A's flashbench JSON files from earlier runs")
    parser.add_argument("--b-runs", nargs="+", metavar="JSON", help="B's: with --a-runs nothing is run")
    args = parser.parse_args(own)
    if args.rounds < 1:
        parser.error(f"--rounds must be >= 1, got {args.rounds}")
    if "--out" in bench_args:
        parser.error("flashbench's --out is set by ab.py; leave it out of the arguments after --")
    if bool(args.a_runs) != bool(args.b_runs):
        parser.error("--a-runs and --b-runs go together")
    if args.a_runs:
        runs = {"a": [load_records(p) for p in args.a_runs], "b": [load_records(p) for p in args.b_runs]}
    else:
        runs = {"a": [], "b": []}
        with tempfile.TemporaryDirectory() as tmp:
            for i in range(args.rounds):
                for side in ("a", "b"):
                    out = os.path.join(tmp, f"{side}{i}.json")
                    runs[side].append(run_flashbench(getattr(args, side), bench_args, out))
    rows = combine(runs["a"], runs["b"])
    rounds = args.rounds if not args.a_runs else None
    result = {"a": args.a, "b": args.b, "rounds": rounds, "flashbench_args": bench_args, "cases": rows}
    if args.a_runs:
        result.update(a_runs=args.a_runs, b_runs=args.b_runs)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print(render(rows, args.a, args.b))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

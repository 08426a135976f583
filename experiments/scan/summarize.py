#!/usr/bin/env python3
"""Compact table of scanbench JSONs: per case and variant, fw / fwbw in ms and as a
fraction of the bandwidth floor, against the issue's targets.

    python3 experiments/scan/summarize.py OUT/bench_*/scan_*.json
"""
import json
import sys

# Issue 6's targets (H200), ms: case name -> (fw, fwbw). The few-channel case's
# target is 1.5x its floor (computed per run).
TARGETS = {
    "bdt fp32 (8,1536,4096)": (0.15, 0.42),
    "bdt bf16 (8,1536,4096)": (0.08, 0.23),
    "bdt fp32 (8,1536,65536)": (2.4, 6.7),
}


def target_of(case):
    if case["case"] in TARGETS:
        return TARGETS[case["case"]]
    if case["shape"][:2] == [1, 16] and case["layout"] == "bdt":
        return (1.5 * case["fw"]["floor_ms"], 1.5 * case["fwbw"]["floor_ms"])
    return None


def main(paths):
    runs = []
    for path in paths:
        with open(path) as f:
            doc = json.load(f)
        runs.append((doc.get("kernel_variant", path), doc))
    if not runs:
        print("no results")
        return
    names = []
    for _, doc in runs:
        for c in doc["cases"]:
            if c["case"] not in names:
                names.append(c["case"])
    for label, doc in runs:
        print(f"[{label}] copy {doc['copy_bandwidth_GBps']:.0f} GB/s")
    header = f"{'case':34s}" + "".join(f" | v{i} fw ms (%)   fwbw ms (%)  " for i in range(len(runs)))
    print(header)
    for name in names:
        row = f"{name:34s}"
        for _, doc in runs:
            c = next((c for c in doc["cases"] if c["case"] == name), None)
            if c is None:
                row += " | " + " " * 30
                continue
            t = target_of(c)
            fw, bw = c["fw"]["cuda"]["median_ms"], c["fwbw"]["cuda"]["median_ms"]
            mark_fw = "" if t is None else ("+" if fw <= t[0] else "-")
            mark_bw = "" if t is None else ("+" if bw <= t[1] else "-")
            ok = "" if c["correct"] else "!"
            row += (f" | {fw:7.4f}{mark_fw:1s}({100 * c['fw']['fraction_of_floor']:3.0f})"
                    f" {bw:7.4f}{mark_bw:1s}({100 * c['fwbw']['fraction_of_floor']:3.0f}){ok:1s}")
        print(row)
    print("(+/- : meets / misses the issue's target; % of the floor; ! = correctness check failed)")
    for i, (label, _) in enumerate(runs):
        print(f"v{i} = {label}")


if __name__ == "__main__":
    main(sys.argv[1:])

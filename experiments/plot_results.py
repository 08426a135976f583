"""The report's figures (PNG) from the committed results JSON.

    python3 experiments/plot_results.py [--results experiments/results] [--out DIR]
        [--flashbench FILE]

Writes, for whichever inputs exist:
  kernel_heads.png   head sweep (B=16, T=1024): ms against head dim, ours (fused,
                     alternating, vanilla loop), cuDNN, causal attention of the
                     same shape (SDPA) and the FlashRNN anchors
                     (the kernel figures draw one flashbench run: --flashbench,
                     default flashbench_v16_NVIDIA_H100.json, every sweep)
  kernel_batch.png   batch sweep (T=1024): LSTM 12x64 ours; 1x768 ours and cuDNN fp16
  kernel_length.png  sequence-length sweep (B=16, 12x64)
  scan.png           scan op: fraction of the copy-bandwidth floor per case
(The state-tracking suite draws its own figures: experiments/tasks/plot_suite.py.)
Needs matplotlib (Debian: python3-matplotlib). Only measured numbers are drawn;
the anchors are the project's reference measurements of FlashRNN 1.0.5's fused
kernels (one H200, B=16, T=1024, bf16).
"""
import argparse
import json
import os
import sys

# FlashRNN 1.0.5's fused kernels, one H200, B=16, T=1024, bf16: ms fw / fwbw.
FLASHRNN_FUSED = {("lstm", 64): (2.80, 7.82), ("lstm", 256): (3.49, 9.67),
                  ("lstm", 768): (4.73, 13.25), ("slstm", 64): (2.75, 8.12)}


def load(path):
    with open(path) as f:
        return json.load(f)


def flashbench_records(path):
    """(cell, backend, B, T, N, D, pass) -> median ms of one flashbench JSON."""
    if not os.path.exists(path):
        return {}
    return {(r["cell"], r["backend"], r["B"], r["T"], r["N"], r["D"], r["pass"]): r["median_ms"]
            for r in load(path).get("records", [])}


def series(records, cell, backend, pass_, vary, **fixed):
    """(x, ms) along `vary` (one of B, T, D) with the other shape values fixed."""
    index = {"B": 2, "T": 3, "N": 4, "D": 5}
    points = []
    for key, ms in records.items():
        if key[0] != cell or key[1] != backend or key[6] != pass_:
            continue
        if all(key[index[k]] == v for k, v in fixed.items()):
            points.append((key[index[vary]], ms))
    return sorted(points)


def draw(ax, points, label, style):
    if points:
        xs, ys = zip(*points)
        ax.plot(xs, ys, style, label=label)


def log_log_panel(ax, xlabel, title):
    """Axes of a timing panel: log2 x, log y in ms, title, legend."""
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("ms")
    ax.set_title(title)
    ax.legend(fontsize=8)


def save(plt, fig, out):
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def kernel_heads(plt, records, out):
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    for row, cell in enumerate(["lstm", "slstm"]):
        for col, pass_ in enumerate(["fw", "fwbw"]):
            ax = axes[row][col]
            for backend, style in (("fused", "o-"), ("alternating", "s--"), ("vanilla", "v:")):
                draw(ax, series(records, cell, backend, pass_, "D", B=16, T=1024), f"ours {backend}", style)
            draw(ax, series(records, cell, "cudnn_fp16", pass_, "D", B=16, T=1024), "cuDNN fp16", "^")
            draw(ax, series(records, "sdpa", "sdpa_causal", pass_, "D", B=16, T=1024), "causal attention (SDPA)", "*-")
            anchors = [(d, v[col]) for (c, d), v in sorted(FLASHRNN_FUSED.items()) if c == cell]
            draw(ax, anchors, "FlashRNN fused (reference measurements)", "x:")
            log_log_panel(ax, "head dim (heads = 768 / head dim)", f"{cell} {pass_}, B=16, T=1024, bf16")
    save(plt, fig, out)


def kernel_batch(plt, records, out):
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for col, pass_ in enumerate(["fw", "fwbw"]):
        ax = axes[col]
        for cell in ("lstm", "slstm"):
            draw(ax, series(records, cell, "fused", pass_, "B", T=1024, N=12, D=64), f"{cell} 12x64 fused", "o-")
        draw(ax, series(records, "lstm", "alternating", pass_, "B", T=1024, N=12, D=64), "lstm 12x64 alternating", "s--")
        draw(ax, series(records, "lstm", "alternating", pass_, "B", T=1024, N=1, D=768), "lstm 1x768 alternating", "d--")
        draw(ax, series(records, "lstm", "cudnn_fp16", pass_, "B", T=1024, N=1, D=768), "lstm 1x768 cuDNN fp16", "^-")
        log_log_panel(ax, "batch size", f"batch sweep {pass_}, T=1024")
    save(plt, fig, out)


def kernel_length(plt, records, out):
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for col, pass_ in enumerate(["fw", "fwbw"]):
        ax = axes[col]
        for cell in ("lstm", "slstm"):
            for backend, style in (("fused", "o-"), ("alternating", "s--")):
                draw(ax, series(records, cell, backend, pass_, "T", B=16, N=12, D=64), f"{cell} {backend}", style)
        log_log_panel(ax, "sequence length", f"length sweep {pass_}, B=16, 12x64")
    save(plt, fig, out)


def scan_figure(plt, scan, out):
    cases = scan["cases"]
    names = [c["case"] for c in cases]
    fw = [100 * c["fw"]["fraction_of_floor"] for c in cases]
    fwbw = [100 * c["fwbw"]["fraction_of_floor"] for c in cases]
    fig, ax = plt.subplots(figsize=(11, 4.5))
    xs = range(len(names))
    ax.bar([x - 0.2 for x in xs], fw, width=0.4, label="forward")
    ax.bar([x + 0.2 for x in xs], fwbw, width=0.4, label="forward + backward")
    ax.axhline(100 / 1.5, color="gray", linestyle=":", label="1.5x the floor")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("% of the copy-bandwidth floor")
    ax.set_title(f"scan op, {scan['device']} (copy {scan['copy_bandwidth_GBps']:.0f} GB/s)")
    ax.legend(fontsize=8)
    save(plt, fig, out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", default="experiments/results")
    parser.add_argument("--out", default="experiments/results/plots")
    parser.add_argument("--flashbench", default="", help="a flashbench JSON (default: "
                        "RESULTS/flashbench_v16_NVIDIA_H100.json, every sweep in one run)")
    args = parser.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot_results: needs matplotlib (Debian: python3-matplotlib)")
    os.makedirs(args.out, exist_ok=True)
    written = []
    records = flashbench_records(args.flashbench or
                                 os.path.join(args.results, "flashbench_v16_NVIDIA_H100.json"))
    if records:
        for name, fn in (("kernel_heads.png", kernel_heads), ("kernel_batch.png", kernel_batch),
                         ("kernel_length.png", kernel_length)):
            fn(plt, records, os.path.join(args.out, name))
            written.append(name)
    scan_path = os.path.join(args.results, "scan_nvidia_h200.json")
    if os.path.exists(scan_path):
        scan_figure(plt, load(scan_path), os.path.join(args.out, "scan.png"))
        written.append("scan.png")
    print("wrote " + ", ".join(os.path.join(args.out, w) for w in written))


if __name__ == "__main__":
    main()

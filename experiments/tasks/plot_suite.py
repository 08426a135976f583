#!/usr/bin/env python3
"""The state-tracking suite's figures from its suite.json (run_suite.py):

    python3 experiments/tasks/plot_suite.py SUITE.json [--out DIR] [--tasks parity,s5]

  heat_map.png            one panel per test band: rows = models, columns = tasks,
                          colour = the best fitted run's scaled accuracy; each cell
                          prints it, the median of the fitted runs below ("nf": no
                          run fitted its training lengths)
  accuracy_by_length.png  one panel per task of --tasks: for each model its best
                          run (on the first band): accuracy against the evaluated
                          length (bucketed) over both test bands, a vertical line at
                          the longest training length. A solution that counts
                          instead of tracking state falls off with length; one that
                          tracks state stays flat.
Needs matplotlib (Debian: python3-matplotlib); bucket() and best_run() do not.
"""
import argparse
import json
import os
import sys

BUCKETS = 24
TASKS = "parity,even_pairs,cycle_navigation,modular_arithmetic"


def bucket(triples, buckets=BUCKETS):
    """Sums [length, correct, total] triples into `buckets` equal ranges of
    length; returns, for each non-empty range in order, a dict of lo and hi
    (the lengths it spans), correct, total and accuracy."""
    if not triples:
        return []
    lo, hi = min(t[0] for t in triples), max(t[0] for t in triples)
    width = (hi - lo + 1) / buckets
    sums = {}
    for length, correct, total in triples:
        index = min(int((length - lo) / width), buckets - 1)
        cell = sums.setdefault(index, {"lo": length, "hi": length, "correct": 0, "total": 0})
        cell["lo"], cell["hi"] = min(cell["lo"], length), max(cell["hi"], length)
        cell["correct"] += correct
        cell["total"] += total
    out = []
    for index in sorted(sums):
        cell = sums[index]
        if cell["total"] > 0:
            out.append({**cell, "accuracy": cell["correct"] / cell["total"]})
    return out


def best_run(suite, task, model, band="test"):
    """The run record named best on `band` in suite's cell (task, model), or None."""
    best = suite["cells"].get(task, {}).get(model, {}).get("bands", {}).get(band, {}).get("best")
    if not best:
        return None
    return next((r for r in suite["runs"] if r["run"] == best["run"]), None)


def heat_map(plt, suite, path):
    """The xLSTM-style table as colours, one panel per test band: models x
    tasks, the best fitted run's scaled accuracy."""
    models, tasks = list(suite["models"]), list(suite["cells"])
    bands = suite["recipe"]["bands"]
    fig, axes = plt.subplots(len(bands), 1, figsize=(1.25 * len(tasks) + 2.5, (0.6 * len(models) + 1.6) * len(bands)),
                             squeeze=False)
    for ax, (band, lengths) in zip(axes[:, 0], bands.items()):
        cells = [[suite["cells"][t][m] for t in tasks] for m in models]
        stats = [[c["bands"][band] for c in row] for row in cells]
        values = [[float("nan") if b["max"] is None else max(0.0, min(1.0, b["max"])) for b in row] for row in stats]
        image = ax.imshow(values, vmin=0, vmax=1, cmap="viridis", aspect="auto")
        for i, row in enumerate(cells):
            for j, cell in enumerate(row):
                b = cell["bands"][band]
                if b["max"] is None:
                    label = "nf" if cell["finished"] else "–"
                    ax.text(j, i, label, ha="center", va="center", color="gray")
                    continue
                color = "black" if b["max"] > 0.6 else "white"
                ax.text(j, i - 0.08, f"{b['max']:.2f}", ha="center", va="center", color=color, fontsize=9)
                ax.text(j, i + 0.25, f"{b['median']:.2f}", ha="center", va="center", color=color, fontsize=6)
        ax.set_xticks(range(len(tasks)))
        ax.set_xticklabels([t.replace("_", " ") for t in tasks], rotation=30, ha="right")
        ax.set_yticks(range(len(models)))
        ax.set_yticklabels(models)
        fig.colorbar(image, ax=ax, label="best fitted run (median below)")
        recipe = suite["recipe"]
        ax.set_title(f"lengths {lengths}: at most {recipe['steps']} steps, lr x seeds per row as in table.txt",
                     fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def accuracy_by_length(plt, suite, tasks, path):
    """One panel per task, one line per model: its best run's accuracy by
    length bucket over both test bands. Returns the number of lines drawn."""
    fig, axes = plt.subplots(len(tasks), 1, figsize=(8, 3.2 * len(tasks)), squeeze=False)
    drawn = 0
    for ax, task in zip(axes[:, 0], tasks):
        for model in suite["models"]:
            run = best_run(suite, task, model)
            if not run or not run.get("answers_by_length"):
                continue
            points = bucket(run["answers_by_length"])
            ax.plot([(p["lo"] + p["hi"]) / 2 for p in points], [p["accuracy"] for p in points], "o-",
                    markersize=3, label=f"{model} (lr {run['lr']:g}, seed {run['seed']})")
            drawn += 1
        ax.axvline(suite["recipe"]["train_lengths"][1], color="gray", linestyle=":",
                   label="longest training length")
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("sequence length (bucketed)")
        ax.set_ylabel("sequences right")
        ax.set_title(f"{task}: best run of each model", fontsize=9)
        ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return drawn


def draw(suite, out, tasks=TASKS.split(",")):
    """Writes both figures into `out`; returns their paths. Raises ImportError
    without matplotlib."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    written = [os.path.join(out, "heat_map.png")]
    heat_map(plt, suite, written[0])
    tasks = [t for t in tasks if t in suite["cells"]]
    if tasks:
        path = os.path.join(out, "accuracy_by_length.png")
        if accuracy_by_length(plt, suite, tasks, path):
            written.append(path)
        elif os.path.exists(path):
            os.remove(path)
    return written


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("suite", help="a run_suite.py suite.json")
    parser.add_argument("--out", default="", help="folder of the figures (default: the suite's)")
    parser.add_argument("--tasks", default=TASKS, help="tasks of the accuracy-by-length figure")
    args = parser.parse_args()
    with open(args.suite) as f:
        suite = json.load(f)
    tasks = [t for t in args.tasks.split(",") if t]
    unknown = [t for t in tasks if t not in suite["cells"]]
    if unknown:
        sys.exit(f"plot_suite: tasks {unknown} are not in {args.suite} ({', '.join(suite['cells'])})")
    try:
        written = draw(suite, args.out or os.path.dirname(os.path.abspath(args.suite)), tasks)
    except ImportError:
        sys.exit("plot_suite: needs matplotlib (Debian: python3-matplotlib)")
    print("wrote " + ", ".join(written))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The state-tracking suite's figures from its suite.json (run_suite.py):

    python3 experiments/tasks/plot_suite.py SUITE.json [--out DIR] [--task parity]

  heat_map.png            rows = models, columns = tasks, colour = the best run's
                          scaled accuracy; each cell prints it, the median below
  accuracy_by_length.png  for each model its best run on --task: accuracy against
                          the evaluated length (bucketed), a vertical line at the
                          longest training length. A solution that counts instead of
                          tracking state falls off past the training lengths; one
                          that tracks state stays flat.
Needs matplotlib (Debian: python3-matplotlib); bucket() and best_run() do not.
"""
import argparse
import json
import os
import sys

BUCKETS = 12


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


def best_run(suite, task, model):
    """The run record named best in suite's cell (task, model), or None."""
    best = suite["cells"].get(task, {}).get(model, {}).get("best")
    if not best:
        return None
    return next((r for r in suite["runs"] if r["run"] == best["run"]), None)


def heat_map(plt, suite, path):
    """The xLSTM-style table as colours: models x tasks, max scaled accuracy."""
    models, tasks = list(suite["models"]), list(suite["cells"])
    cells = [[suite["cells"][t][m] for t in tasks] for m in models]
    values = [[float("nan") if c["max"] is None else max(0.0, min(1.0, c["max"])) for c in row]
              for row in cells]
    fig, ax = plt.subplots(figsize=(1.25 * len(tasks) + 2.5, 0.6 * len(models) + 2))
    image = ax.imshow(values, vmin=0, vmax=1, cmap="viridis", aspect="auto")
    for i, row in enumerate(cells):
        for j, cell in enumerate(row):
            if cell["max"] is None:
                ax.text(j, i, "–", ha="center", va="center", color="gray")
                continue
            color = "black" if cell["max"] > 0.6 else "white"
            ax.text(j, i - 0.08, f"{cell['max']:.2f}", ha="center", va="center", color=color, fontsize=9)
            ax.text(j, i + 0.25, f"{cell['median']:.2f}", ha="center", va="center", color=color, fontsize=6)
    ax.set_xticks(range(len(tasks)))
    ax.set_xticklabels([t.replace("_", " ") for t in tasks], rotation=30, ha="right")
    ax.set_yticks(range(len(models)))
    ax.set_yticklabels(models)
    fig.colorbar(image, label="scaled accuracy, best run (median below)")
    recipe = suite["recipe"]
    ax.set_title(f"lengths {recipe['test_lengths'][0]}-{recipe['test_lengths'][1]}, "
                 f"{len(recipe['lrs'])} lr x {len(recipe['seeds'])} seeds, "
                 f"at most {recipe['steps']} steps", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def accuracy_by_length(plt, suite, task, path):
    """One line per model: its best run's accuracy by length bucket on `task`.
    Returns the number of models drawn."""
    fig, ax = plt.subplots(figsize=(8, 4.5))
    drawn = 0
    for model in suite["models"]:
        run = best_run(suite, task, model)
        if not run or not run.get("answers_by_length"):
            continue
        points = bucket(run["answers_by_length"])
        ax.plot([(p["lo"] + p["hi"]) / 2 for p in points], [p["accuracy"] for p in points], "o-",
                markersize=3, label=f"{model} (lr {run['lr']:g}, seed {run['seed']}, "
                                    f"scaled {run['scaled_accuracy']:.2f})")
        drawn += 1
    ax.axvline(suite["recipe"]["train_lengths"][1], color="gray", linestyle=":",
               label="longest training length")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("sequence length (bucketed)")
    ax.set_ylabel("accuracy")
    ax.set_title(f"{task}: accuracy by length, best run of each model")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return drawn


def draw(suite, out, task="parity"):
    """Writes both figures into `out`; returns their paths. Raises ImportError
    without matplotlib."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    written = [os.path.join(out, "heat_map.png")]
    heat_map(plt, suite, written[0])
    if task in suite["cells"]:
        path = os.path.join(out, "accuracy_by_length.png")
        if accuracy_by_length(plt, suite, task, path):
            written.append(path)
        elif os.path.exists(path):
            os.remove(path)
    return written


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("suite", help="a run_suite.py suite.json")
    parser.add_argument("--out", default="", help="folder of the figures (default: the suite's)")
    parser.add_argument("--task", default="parity", help="task of the accuracy-by-length figure")
    args = parser.parse_args()
    with open(args.suite) as f:
        suite = json.load(f)
    if args.task not in suite["cells"]:
        sys.exit(f"plot_suite: task {args.task} is not in {args.suite} ({', '.join(suite['cells'])})")
    try:
        written = draw(suite, args.out or os.path.dirname(os.path.abspath(args.suite)), args.task)
    except ImportError:
        sys.exit("plot_suite: needs matplotlib (Debian: python3-matplotlib)")
    print("wrote " + ", ".join(written))


if __name__ == "__main__":
    main()

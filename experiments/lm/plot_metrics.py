"""Loss curves and throughput from flashtrain's JSON-lines metrics, as PNG.

    python experiments/lm/plot_metrics.py RUN.metrics.jsonl [MORE.jsonl ...] --output loss.png

Each file is one run, labelled by its file name (or `--labels a,b`). The figure
has three panels: training loss and validation loss against tokens seen, and
tokens/s against step. Needs matplotlib (Debian: python3-matplotlib).
"""
import argparse
import json
import os
import sys


def read_run(path):
    """The train and validation records of one metrics file, as lists of dicts.
    A resumed run appends to the same file; a later record for a step replaces
    an earlier one, so the curve has no doubled-back segments."""
    train, val = {}, {}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                sys.exit(f"{path}:{number}: not JSON ({error})")
            kind = record.get("kind")
            if kind == "train":
                train[record["step"]] = record
            elif kind == "val":
                val[record["step"]] = record
    return [train[s] for s in sorted(train)], [val[s] for s in sorted(val)]


def tokens_at(train, step):
    """Tokens seen at `step`, from the nearest train record at or before it."""
    seen = 0
    for record in train:
        if record["step"] > step:
            break
        seen = record["tokens_seen"]
    return seen


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("metrics", nargs="+", help="metrics.jsonl files, one per run")
    parser.add_argument("--output", required=True, help="PNG file to write")
    parser.add_argument("--labels", help="comma-separated run labels (default: file names)")
    args = parser.parse_args()
    labels = args.labels.split(",") if args.labels else [os.path.basename(p) for p in args.metrics]
    if len(labels) != len(args.metrics):
        sys.exit(f"--labels names {len(labels)} runs but {len(args.metrics)} files were given")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot_metrics.py needs matplotlib (Debian: python3-matplotlib; pip: matplotlib)")

    figure, (loss_axis, val_axis, speed_axis) = plt.subplots(1, 3, figsize=(15, 4.2))
    for path, label in zip(args.metrics, labels):
        train, val = read_run(path)
        if not train:
            sys.exit(f"{path}: no training records")
        loss_axis.plot([r["tokens_seen"] for r in train], [r["loss"] for r in train], label=label)
        if val:
            val_axis.plot([tokens_at(train, r["step"]) for r in val], [r["loss"] for r in val], "o-", label=label)
        speed_axis.plot([r["step"] for r in train], [r["tokens_per_second"] for r in train], label=label)
    loss_axis.set(title="training loss", xlabel="tokens seen", ylabel="nats / token")
    val_axis.set(title="validation loss", xlabel="tokens seen", ylabel="nats / token")
    speed_axis.set(title="throughput", xlabel="step", ylabel="tokens / s")
    from matplotlib.ticker import EngFormatter

    for axis in (loss_axis, val_axis):
        axis.xaxis.set_major_formatter(EngFormatter())  # 400k, not 400000
    speed_axis.yaxis.set_major_formatter(EngFormatter())
    for axis in (loss_axis, val_axis, speed_axis):
        axis.grid(alpha=0.3)
        axis.legend()
    figure.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    # Written next to the target, then renamed: a reader never sees half a PNG.
    temporary = args.output + ".tmp.png"
    figure.savefig(temporary, dpi=110)
    os.replace(temporary, args.output)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()

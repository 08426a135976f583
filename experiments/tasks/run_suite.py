#!/usr/bin/env python3
"""The state-tracking suite of docs/TASKS.md: tasks x model rows x learning
rates x seeds through `flashtrain`, each run trained on lengths 3..40 for the
whole steps cap (or, with --target-loss, until its training loss reaches it),
its final checkpoint scored on three bands of lengths: the training lengths (did it fit?),
40..256 and 257..1024 (4096 sequences each). Per (task, model) and test band:
over the runs that fit their training lengths, the maximum and median scaled
accuracy, and the runs solved (>= 0.9) of all runs; written as suite.json,
table.txt (the published values beside ours) and, with matplotlib, the heat map
and accuracy by length.

    python3 experiments/tasks/run_suite.py --out DIR [--tasks parity,s5]
        [--models lstm,lstm_block,slstm,transformer,linear_scan,gru,elman]
        [--lrs 1e-2,1e-3,1e-4] [--row-lrs transformer=3e-4,...] [--seeds 0,1,2]
        [--row-seeds lstm=0,1,2,3,4] [--steps 100000] [--steps-for parity=N,...]
        [--target-loss 0] [--jobs N] [--gpus 0,1] [--deadline SECONDS]
        [--start-deadline SECONDS]
        [--report-only] [--pack FILE.tgz] [--flashtrain build/trainer/flashtrain]
        [-- extra overrides...]

Every row gets the same step cap and seeds-by-rates grid; the defaults are the
xLSTM paper's (100k steps, lr {1e-2, 1e-3, 1e-4}) plus 3e-4 for the
Transformer and the linear scan, 3 seeds and 5 for the plain LSTM.

Runs live in DIR/runs/<task>-<model>-lr<lr>-seed<seed>/ (flashtrain's dump
folder: metrics.jsonl, log.txt, checkpoints; run.json, the settings it was
started with). A run is finished when its metrics hold a validation record at
its last step: the steps cap, or the step of its target_loss event. Finished
runs are skipped, so rerunning the command continues an interrupted suite; an
unfinished run restarts and flashtrain resumes it from its newest checkpoint
(one every --checkpoint-interval steps). A run folder started with other
settings (another cap, target loss or override) is refused: use another DIR.

The queue goes seed by seed, then learning rate, then task and model, so a suite
cut short still has runs in every (task, model) cell. --jobs runs go at once,
spread over --gpus through CUDA_VISIBLE_DEVICES (the models are small: one GPU
holds several). After --deadline seconds no run starts and the running ones get
SIGTERM (flashtrain saves a checkpoint and stops); the report covers what has
finished, and the next invocation picks up the rest. --start-deadline (earlier)
stops only the starting: the running runs go on to the --deadline, so a last
invocation finishes what it holds instead of starting runs it cannot finish. --pack writes the report
and each run's records (thinned metrics, run.json, log tail) into one .tgz;
unpacked into a fresh DIR, its finished runs count as done there.
"""
import argparse
import concurrent.futures
import io
import json
import os
import queue
import statistics
import subprocess
import sys
import tarfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import published  # noqa: E402  the papers' values, beside ours in the table

TASKS = ["parity", "even_pairs", "cycle_navigation", "modular_arithmetic",
         "modular_arithmetic_brackets", "majority", "majority_count", "s5", "z60",
         "bucket_sort", "missing_duplicate", "solve_equation"]

# The model rows: flashtrain overrides on configs/tasks_parity.toml. "lstm" is
# the papers' LSTM (a plain recurrent layer, one dense head, and a readout:
# the config's own model); gru and elman likewise. The plain rows take
# Delétang et al.'s geometry, one layer of 256: the xLSTM paper's two layers
# of 128 solve cycle navigation in 1 of 5 runs and lose it with length, one
# layer of 256 in 5 of 5 (experiments/README.md §3, results/tasks/recipe_study).
# The block rows put the mixer inside two residual blocks of 128 with a
# feed-forward, 4 heads of 32 (the xLSTM paper's): "lstm_block" the LSTM,
# "slstm" the sLSTM block without its convolution and without the
# feed-forward (with it the sLSTM fits the training lengths and extends to none
# of 40..1024 in the block study: experiments/README.md §3; configs/tasks_slstm.toml
# is this row), "transformer" and "linear_scan".
PLAIN = ["--model.structure=plain", "--model.dim=256", "--model.n_layers=1", "--model.n_heads=1",
         "--model.head_dim=0"]
BLOCK = ["--model.structure=residual", "--model.dim=128", "--model.n_layers=2", "--model.n_heads=4",
         "--model.head_dim=32"]
MODEL_ROWS = {
    "lstm": ["--model.kind=lstm", *PLAIN],
    "lstm_block": ["--model.kind=lstm", *BLOCK],
    "slstm": ["--model.kind=slstm", *BLOCK, "--model.conv_kernel=0", "--model.ffn_factor=0"],
    "transformer": ["--model.kind=transformer", *BLOCK],
    "linear_scan": ["--model.kind=linear_scan", *BLOCK],
    "gru": ["--model.kind=gru", *PLAIN],
    "elman": ["--model.kind=elman", *PLAIN],
}

# The xLSTM paper's recipe for its formal-language tasks (TASKS.md), as fixed
# overrides; the warm-up and the final learning rate follow from steps and lr
# (recipe_overrides()). configs/tasks_parity.toml holds the same recipe (a test
# keeps them equal); pinning it here keeps a suite's runs alike when the
# config is edited between invocations.
BATCH, VALIDATION_BATCHES = 256, 16
TRAIN_LENGTHS, TEST_LENGTHS, LONG_LENGTHS = (3, 40), (40, 256), (257, 1024)
# The scored bands of a run's final validation (flashtrain's "bands"), in
# table order, and what a table calls them.
BANDS = {"test": f"{TEST_LENGTHS[0]}-{TEST_LENGTHS[1]}", "long": f"{LONG_LENGTHS[0]}-{LONG_LENGTHS[1]}"}
FINAL_LR = 1e-5
# The grid every row gets, and what some rows get beside it: the xLSTM paper's
# rates; the Transformer and the linear scan also 3e-4 (they often do best at
# low rates); five seeds for the plain LSTM, the row the targets are set on.
LRS, SEEDS = (1e-2, 1e-3, 1e-4), (0, 1, 2)
ROW_LRS = {"transformer": (3e-4,), "linear_scan": (3e-4,)}
ROW_SEEDS = {"lstm": (0, 1, 2, 3, 4)}
STEPS = 100000
# Every run trains the whole cap. Stopping at an exact fit (mean training loss
# <= 1e-4) left the plain LSTM's cycle navigation solutions fragile with length
# (median 0.59 on 257-1024 over the 15 runs); trained on through the cosine
# schedule (training loss ~1e-8) every run of five holds to 1024, where a
# stricter stop (1e-6) holds in four (experiments/README.md §3, recipe study).
TARGET_LOSS = 0.0
RECIPE = [
    "--optimizer.name=adamw", "--optimizer.beta1=0.9", "--optimizer.beta2=0.99",
    "--optimizer.weight_decay=0.1", f"--training.local_batch_size={BATCH}",
    "--lr_scheduler.decay=cosine",
    f"--data.task_train_min_len={TRAIN_LENGTHS[0]}", f"--data.task_train_max_len={TRAIN_LENGTHS[1]}",
    f"--data.task_val_min_len={TEST_LENGTHS[0]}", f"--data.task_val_max_len={TEST_LENGTHS[1]}",
    f"--data.task_val_long_max_len={LONG_LENGTHS[1]}",
    f"--validation.steps={VALIDATION_BATCHES}", "--checkpoint.keep_last=1",
]
RECIPE_TEXT = (f"AdamW (0.9, 0.99), weight decay 0.1, batch {BATCH}, 10 % warm-up then cosine "
               f"to min(1e-5, lr/10); plain rows one layer of 256, block rows two blocks of 128; trained on "
               f"lengths {TRAIN_LENGTHS[0]}-{TRAIN_LENGTHS[1]}, final checkpoint evaluated on "
               f"{TRAIN_LENGTHS[0]}-{TRAIN_LENGTHS[1]}, {BANDS['test']} and {BANDS['long']} "
               f"({VALIDATION_BATCHES} x {BATCH} sequences each)")
SOLVED = 0.9
FITTED = 0.95
SELECTION = (f"score = scaled accuracy of the final checkpoint on a test band, the prediction being "
             f"the answer token of highest logit (s5, z60: per-position accuracy over the positions "
             f"beyond the training lengths; bucket_sort: per-token accuracy over the output); a run "
             f"is fitted when it scores >= {FITTED} on its training lengths; per (task, model): "
             f"max = the best fitted run (selected on the test band, as the papers report), median "
             f"of the fitted runs, solved k/n = runs scoring >= {SOLVED} of all finished runs, "
             f"fitted m = runs fitted; 'not fitted' when none is, with the best in-distribution score")
GRACE_SECONDS = 30  # after SIGTERM at the deadline, before SIGKILL
PACKED_TRAIN_EVERY = 500  # --pack keeps training records of these steps (and each attempt's last)
PACKED_LOG_LINES = 40


def lr_label(lr):
    """A learning rate as written in run names: 0.01 -> '1e-2', 0.0025 -> '2.5e-3'."""
    mantissa, exponent = f"{lr:e}".split("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{int(exponent)}"


def run_name(run):
    """The folder name of a run: task-model-lr<lr>-seed<seed>."""
    return f"{run['task']}-{run['model']}-lr{lr_label(run['lr'])}-seed{run['seed']}"


def plan(tasks, models, lrs, seeds, steps, steps_for, row_lrs=None, row_seeds=None):
    """The runs in queue order: seeds outermost, then learning rates, then tasks
    and models, so every (task, model) cell gets runs early. Each run is a dict
    of task, model, lr, seed and steps (its cap: steps_for[task] or steps). A
    row takes the rates lrs + row_lrs[model] and the seeds row_seeds[model]
    (default: seeds)."""
    row_lrs, row_seeds = row_lrs or {}, row_seeds or {}
    all_seeds = sorted(set(seeds).union(*row_seeds.values()))
    all_lrs = sorted(set(lrs).union(*row_lrs.values()), reverse=True)
    return [{"task": t, "model": m, "lr": lr, "seed": s, "steps": steps_for.get(t, steps)}
            for s in all_seeds for lr in all_lrs for t in tasks for m in models
            if s in row_seeds.get(m, seeds) and (lr in lrs or lr in row_lrs.get(m, ()))]


def recipe_overrides(steps, lr):
    """The recipe's overrides for a run of `steps` steps at learning rate lr."""
    return RECIPE + [f"--lr_scheduler.warmup_steps={steps // 10}",
                     f"--lr_scheduler.min_lr_ratio={min(FINAL_LR / lr, 0.1):g}"]


def run_overrides(run, target_loss, checkpoint_interval, extra):
    """Every flashtrain override of a run but its dump folder (what run.json keeps)."""
    overrides = [f"--data.task={run['task']}", *MODEL_ROWS[run["model"]],
                 f"--optimizer.lr={run['lr']:g}", f"--training.seed={run['seed']}",
                 f"--training.steps={run['steps']}", *recipe_overrides(run["steps"], run["lr"]),
                 f"--validation.every={run['steps']}", f"--checkpoint.interval={checkpoint_interval}"]
    # Always said, 0 included: the config's own target_loss must not stop a run.
    overrides.append(f"--training.target_loss={target_loss:g}")
    return overrides + list(extra)


def read_metrics(path, steps):
    """What a run's metrics.jsonl says of a run capped at `steps`: a dict with
    finished (a validation record at the last step), steps_trained, stopped_early
    (a target_loss event), final_train_loss and final_validation (the last
    validation record, or None). The file grows over restarts; a "start" event
    begins it afresh (a run restarted without a checkpoint)."""
    validation, train_loss, target_step, last_step = None, None, None, 0
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut off by a kill
                kind = record.get("kind")
                if kind == "event" and record.get("event") == "start":
                    validation, train_loss, target_step, last_step = None, None, None, 0
                elif kind == "event" and record.get("event") == "target_loss":
                    target_step = record.get("step")
                elif kind == "train":
                    train_loss, last_step = record.get("loss"), record.get("step", last_step)
                elif kind == "val":
                    validation, last_step = record, record.get("step", last_step)
    end = target_step if target_step is not None else steps
    finished = validation is not None and validation.get("step") == end
    return {"finished": finished, "steps_trained": last_step,
            "stopped_early": target_step is not None, "final_train_loss": train_loss,
            "final_validation": validation}


def run_settings(run, overrides, config):
    """What run.json records of a run: its grid point, config and overrides."""
    return {"task": run["task"], "model": run["model"], "lr": run["lr"], "seed": run["seed"],
            "steps": run["steps"], "config": config, "overrides": overrides}


def settings_conflicts(out, runs, settings):
    """Names of the runs whose run.json differs from the settings they would get now."""
    conflicts = []
    for run, wanted in zip(runs, settings):
        path = os.path.join(out, "runs", run_name(run), "run.json")
        if os.path.exists(path):
            with open(path) as f:
                if json.load(f) != wanted:
                    conflicts.append(run_name(run))
    return conflicts


def train(command, folder, gpu, stop_at):
    """Runs flashtrain (output appended to folder/log.txt) on `gpu` (None: any)
    until it exits or, past monotonic time stop_at, stops it with SIGTERM.
    Returns (exit status, stopped at the deadline?)."""
    env = dict(os.environ)
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpu
    with open(os.path.join(folder, "log.txt"), "a") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            timeout = None if stop_at is None else max(0.0, stop_at - time.monotonic())
            return process.wait(timeout=timeout), False
        except subprocess.TimeoutExpired:
            process.terminate()
            try:
                process.wait(timeout=GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            return process.returncode, True


def execute(args, run, settings, gpu, start_by, stop_at):
    """Runs one grid point unless it has finished or the monotonic time
    start_by has passed; returns its status: cached, finished, failed (exit N),
    stopped at the deadline, not run (deadline) or no final validation."""
    folder = os.path.join(args.out, "runs", run_name(run))
    metrics = os.path.join(folder, "metrics.jsonl")
    if read_metrics(metrics, run["steps"])["finished"]:
        return "cached"
    if start_by is not None and time.monotonic() >= start_by:
        return "not run (deadline)"
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "run.json"), "w") as f:
        json.dump(settings, f, indent=1)
    config = os.path.join(REPO, settings["config"])  # as given when absolute
    command = [args.flashtrain, "--config", config, *settings["overrides"],
               f"--job.dump_folder={folder}"]
    status, stopped = train(command, folder, gpu, stop_at)
    if read_metrics(metrics, run["steps"])["finished"]:
        return "finished"
    if stopped:
        return "stopped at the deadline"
    if status != 0:
        return f"failed (exit {status}, see {folder}/log.txt)"
    return "no final validation"


def band_scores(validation):
    """{band: {scaled_accuracy, accuracy, sequence_accuracy}} of a validation
    record's bands (train, test, long)."""
    keys = ("scaled_accuracy", "accuracy", "sequence_accuracy")
    return {name: {k: band.get(k) for k in keys} for name, band in validation.get("bands", {}).items()}


def run_record(out, run, status):
    """suite.json's record of one run: grid point, status, the final scores of
    each band, whether it fitted its training lengths, and its answers by
    length over both test bands."""
    metrics = read_metrics(os.path.join(out, "runs", run_name(run), "metrics.jsonl"), run["steps"])
    val = metrics["final_validation"] if metrics["finished"] else None
    bands = band_scores(val) if val else {}
    train_score = bands.get("train", {}).get("scaled_accuracy")
    by_length = []
    for name in BANDS:
        if val and name in val.get("bands", {}):
            by_length += val["bands"][name].get("answers_by_length") or []
    return {"run": run_name(run), **run, "status": status, "finished": metrics["finished"],
            "steps_trained": metrics["steps_trained"], "stopped_early": metrics["stopped_early"],
            "final_train_loss": metrics["final_train_loss"],
            "fitted": None if train_score is None else train_score >= FITTED,
            "bands": bands,
            "scaled_accuracy": bands.get("test", {}).get("scaled_accuracy"),
            "answers_by_length": by_length or None}


def cell_stats(scores, finished):
    """max, median and solved (score >= SOLVED) of the fitted runs' scores of a
    band, out of `finished` runs."""
    if not scores:
        return {"max": None, "median": None, "solved": 0, "finished": finished}
    return {"max": max(scores), "median": statistics.median(scores),
            "solved": sum(1 for s in scores if s >= SOLVED), "finished": finished}


def summarize_cells(records, tasks, models):
    """Per task, per model: planned, finished and fitted runs, the best
    in-distribution score, and per test band the stats of the fitted runs and
    the best of them (highest score; ties: lower final training loss, then
    fewer steps)."""
    cells = {}
    for task in tasks:
        for model in models:
            runs = [r for r in records if r["task"] == task and r["model"] == model]
            finished = [r for r in runs if r["finished"] and r["bands"]]
            fitted = [r for r in finished if r["fitted"]]
            train = [r["bands"]["train"]["scaled_accuracy"] for r in finished if "train" in r["bands"]]
            cell = {"planned": len(runs), "finished": len(finished), "fitted": len(fitted),
                    "best_in_distribution": max(train) if train else None, "bands": {}}
            for band in BANDS:
                scored = [r for r in fitted if band in r["bands"]]
                stats = cell_stats([r["bands"][band]["scaled_accuracy"] for r in scored], len(finished))
                if scored:
                    best = max(scored, key=lambda r: (r["bands"][band]["scaled_accuracy"],
                                                      -(r["final_train_loss"] or 0.0), -r["steps_trained"]))
                    stats["best"] = {"run": best["run"], "lr": best["lr"], "seed": best["seed"],
                                     "steps_trained": best["steps_trained"]}
                cell["bands"][band] = stats
            cells.setdefault(task, {})[model] = cell
    return cells


def format_cell(cell, band):
    """A table cell: 'max / median (solved/finished)', with '; m fitted' when
    some finished runs did not fit, 'not fitted (best in-distribution)' when
    none did, '*' when runs are missing."""
    if cell["finished"] == 0:
        return "–"
    missing = "*" if cell["finished"] < cell["planned"] else ""
    if cell["fitted"] == 0:
        return f"not fitted ({cell['best_in_distribution']:.2f}){missing}"
    stats = cell["bands"][band]
    fitted = f"; {cell['fitted']} fitted" if cell["fitted"] < cell["finished"] else ""
    return (f"{stats['max']:.2f} / {stats['median']:.2f} ({stats['solved']}/{stats['finished']}"
            f"{fitted}){missing}")


def steps_text(recipe):
    """'100000 steps (no early stop)', or 'at most 20000 steps, stopped at ...',
    with the per-task caps."""
    early_stop = recipe["target_loss"] > 0
    text = f"{'at most ' if early_stop else ''}{recipe['steps']} steps"
    if recipe["steps_for"]:
        text += " (" + ", ".join(f"{t} {n}" for t, n in recipe["steps_for"].items()) + ")"
    if early_stop:
        text += f", stopped at training loss <= {recipe['target_loss']:g}"
    else:
        text += ", no early stop"
    return text


def grid_text(recipe):
    """'lr 1e-2, 1e-3 (transformer also 3e-4) x seeds 0, 1, 2 (lstm 0..4)'."""
    def labels(lrs):
        return ", ".join(lr_label(x) for x in lrs)
    text = f"lr {labels(recipe['lrs'])}"
    if recipe["row_lrs"]:
        text += " (" + "; ".join(f"{m} also {labels(v)}" for m, v in recipe["row_lrs"].items()) + ")"
    text += f" x seeds {', '.join(str(s) for s in recipe['seeds'])}"
    if recipe["row_seeds"]:
        text += " (" + "; ".join(f"{m}: {', '.join(str(s) for s in v)}"
                                 for m, v in recipe["row_seeds"].items()) + ")"
    return text


def published_columns(tasks):
    """The published rows that report any of `tasks`, in published.ROWS order."""
    return [row for row in published.ROWS if any(published.value(task, row) for task in tasks)]


def table_text(suite):
    """table.txt: per test band a markdown table tasks x models (the published
    values beside the first: the xLSTM paper tests on those lengths), the
    recipe and the rules."""
    recipe, models = suite["recipe"], suite["models"]
    tasks = list(suite["cells"])
    lines = []
    for band, lengths in BANDS.items():
        columns = published_columns(tasks) if band == "test" else []
        lines += [f"State tracking: scaled accuracy on lengths {lengths}, max / median (solved k/n) over "
                  f"learning rates x seeds" + ("; published values beside (P)" if columns else ""), "",
                  "| task | " + " | ".join(models) + "".join(f" | P: {published.ROWS[c]}" for c in columns)
                  + " |", "|---" * (len(models) + len(columns) + 1) + "|"]
        for task, row in suite["cells"].items():
            cells = [format_cell(row[m], band) for m in models] + [published.text(task, c) for c in columns]
            lines.append(f"| {task} | " + " | ".join(cells) + " |")
        lines.append("")
    missing = any(c["finished"] < c["planned"] for row in suite["cells"].values() for c in row.values())
    lines += [f"Recipe: {steps_text(recipe)}; {grid_text(recipe)}; {RECIPE_TEXT}."]
    if recipe["extra"]:
        lines.append("Extra overrides: " + " ".join(recipe["extra"]))
    lines.append(f"Selection: {SELECTION}.")
    if published_columns(tasks):
        lines.append(f"Published (P): {published.SOURCES}.")
    if missing:
        lines.append("*: fewer runs finished than planned (rerun the command to finish them).")
    return "\n".join(lines) + "\n"


def write_json(path, value):
    """Writes `value` atomically, indented, except that each element of a
    top-level "runs" list takes one line (a run's answers by length are
    hundreds of numbers: one per line would triple the file)."""
    runs = value.get("runs") if isinstance(value, dict) else None
    if isinstance(runs, list) and runs:
        head = json.dumps({k: v for k, v in value.items() if k != "runs"}, indent=1)
        body = ",\n".join("  " + json.dumps(run, separators=(",", ":")) for run in runs)
        text = head[:-2] + ',\n "runs": [\n' + body + "\n ]\n}"
    else:
        text = json.dumps(value, indent=1)
    with open(path + ".tmp", "w") as f:
        f.write(text + "\n")
    os.replace(path + ".tmp", path)


def thin_metrics(lines, every=PACKED_TRAIN_EVERY):
    """The lines of a metrics.jsonl worth packing: every record but training
    records, of which those at multiples of `every` steps and the last of each
    run of them stay; lines cut off by a kill go."""
    records = []
    for line in lines:
        try:
            records.append((line.rstrip("\n") + "\n", json.loads(line)))
        except json.JSONDecodeError:
            continue
    kept = []
    for i, (line, record) in enumerate(records):
        train = record.get("kind") == "train"
        next_train = i + 1 < len(records) and records[i + 1][1].get("kind") == "train"
        if not train or not next_train or record.get("step", 0) % every == 0:
            kept.append(line)
    return kept


def pack(out, runs, path):
    """A .tgz of the report (suite.json, table.txt, the plots) and of each run
    its run.json, thinned metrics.jsonl and log_tail.txt, named relative to
    `out`: unpacked into another suite folder, its finished runs are skipped."""
    def add_text(archive, name, text):
        data = text.encode()
        info = tarfile.TarInfo(name)
        info.size, info.mtime = len(data), time.time()
        archive.addfile(info, io.BytesIO(data))

    with tarfile.open(path + ".tmp", "w:gz") as archive:
        for name in ("suite.json", "table.txt", "heat_map.png", "accuracy_by_length.png"):
            if os.path.exists(os.path.join(out, name)):
                archive.add(os.path.join(out, name), arcname=name)
        for run in runs:
            folder = os.path.join("runs", run_name(run))
            if not os.path.exists(os.path.join(out, folder, "run.json")):
                continue
            archive.add(os.path.join(out, folder, "run.json"), arcname=os.path.join(folder, "run.json"))
            for name, packed, keep in (("metrics.jsonl", "metrics.jsonl", thin_metrics),
                                       ("log.txt", "log_tail.txt", lambda l: l[-PACKED_LOG_LINES:])):
                source = os.path.join(out, folder, name)
                if os.path.exists(source):
                    with open(source, errors="replace") as f:
                        add_text(archive, os.path.join(folder, packed), "".join(keep(f.readlines())))
    os.replace(path + ".tmp", path)


def parse_list(text, convert, what):
    try:
        values = [convert(v) for v in text.split(",") if v]
    except ValueError as error:
        sys.exit(f"run_suite: --{what} {text!r}: {error}")
    if not values:
        sys.exit(f"run_suite: --{what} is empty")
    return values


def parse_row_values(text, convert, what):
    """--row-lrs 'transformer=3e-4,linear_scan=3e-4' / --row-seeds 'lstm=0,1,2,3,4'
    -> {model: (values...)}: a model name starts each group."""
    groups, model = {}, None
    for item in filter(None, text.split(",")):
        if "=" in item:
            model, _, item = item.partition("=")
            if model not in MODEL_ROWS:
                sys.exit(f"run_suite: --{what}: unknown model {model!r}; known: {list(MODEL_ROWS)}")
        if model is None:
            sys.exit(f"run_suite: --{what} {text!r}: expected MODEL=V,V,MODEL=V")
        try:
            groups.setdefault(model, []).append(convert(item))
        except ValueError as error:
            sys.exit(f"run_suite: --{what} {text!r}: {error}")
    return {m: tuple(v) for m, v in groups.items()}


def parse_steps_for(text):
    """--steps-for 'parity=100000,s5=50000' -> {task: steps}."""
    caps = {}
    for item in filter(None, text.split(",")):
        task, _, steps = item.partition("=")
        if task not in TASKS or not steps.isdigit() or int(steps) < 1:
            sys.exit(f"run_suite: --steps-for {item!r}: expected TASK=STEPS with a known task "
                     f"and STEPS >= 1")
        caps[task] = int(steps)
    return caps


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="folder of runs/, suite.json, table.txt, plots")
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--models", default=",".join(MODEL_ROWS), help="rows of MODEL_ROWS")
    parser.add_argument("--lrs", default=",".join(f"{x:g}" for x in LRS), help="peak learning rates of every row")
    parser.add_argument("--row-lrs", default=",".join(f"{m}=" + ",".join(f"{x:g}" for x in v)
                                                      for m, v in ROW_LRS.items()),
                        help="more rates for some rows: model=lr,lr,model=lr ('' for none)")
    parser.add_argument("--seeds", default=",".join(str(x) for x in SEEDS))
    parser.add_argument("--row-seeds", default=",".join(f"{m}=" + ",".join(str(x) for x in v)
                                                       for m, v in ROW_SEEDS.items()),
                        help="other seeds for some rows: model=s,s ('' for none)")
    parser.add_argument("--steps", type=int, default=STEPS, help="steps cap of every task")
    parser.add_argument("--steps-for", default="", help="per-task caps: task=N,task=N")
    parser.add_argument("--target-loss", type=float, default=TARGET_LOSS,
                        help="stop a run at this mean training loss (0: train to the cap)")
    parser.add_argument("--checkpoint-interval", type=int, default=2000,
                        help="steps between checkpoints, from which a stopped run resumes")
    parser.add_argument("--config", default=os.path.join(REPO, "configs", "tasks_parity.toml"))
    parser.add_argument("--flashtrain", default=os.path.join(REPO, "build", "trainer", "flashtrain"))
    parser.add_argument("--jobs", type=int, default=1, help="runs at once")
    parser.add_argument("--gpus", default="", help="CUDA devices to spread the runs over, e.g. 0,1")
    parser.add_argument("--deadline", type=float, default=0,
                        help="seconds after which no run starts and running ones are stopped")
    parser.add_argument("--start-deadline", type=float, default=0,
                        help="seconds after which no run starts (default: --deadline); the running "
                        "ones go on to --deadline")
    parser.add_argument("--report-only", action="store_true",
                        help="run nothing; write the report of the runs in --out")
    parser.add_argument("--plot-tasks", default="parity,even_pairs,cycle_navigation,modular_arithmetic",
                        help="tasks of the accuracy-by-length plot")
    parser.add_argument("--pack", default="", help="also write the report and the runs' records "
                        "(thinned metrics, run.json, log tails) into this .tgz")
    parser.add_argument("extra", nargs="*", help="more --section.key=value overrides (after --)")
    args = parser.parse_args(argv)
    args.tasks = parse_list(args.tasks, str, "tasks")
    args.models = parse_list(args.models, str, "models")
    args.lrs = parse_list(args.lrs, float, "lrs")
    args.seeds = parse_list(args.seeds, int, "seeds")
    args.row_lrs = parse_row_values(args.row_lrs, float, "row-lrs")
    args.row_seeds = parse_row_values(args.row_seeds, int, "row-seeds")
    args.steps_for = parse_steps_for(args.steps_for)
    for name, known in (("tasks", TASKS), ("models", list(MODEL_ROWS))):
        unknown = [v for v in getattr(args, name) if v not in known]
        if unknown:
            sys.exit(f"run_suite: unknown {name} {unknown}; known: {known}")
    if any(lr <= 0 for lr in args.lrs + [x for v in args.row_lrs.values() for x in v]):
        sys.exit(f"run_suite: --lrs must be positive, got {args.lrs}")
    if args.start_deadline > 0 and args.deadline > 0 and args.start_deadline > args.deadline:
        sys.exit(f"run_suite: --start-deadline {args.start_deadline:g} is past --deadline {args.deadline:g}")
    if args.steps < 1 or args.jobs < 1 or args.checkpoint_interval < 0:
        sys.exit("run_suite: --steps and --jobs must be >= 1, --checkpoint-interval >= 0")
    if any(o.startswith("--data.seq_len") for o in args.extra):
        sys.exit("run_suite: no --data.seq_len: flashtrain sizes each split's context to its lengths")
    if not args.report_only and not os.path.exists(args.flashtrain):
        sys.exit(f"run_suite: no flashtrain at {args.flashtrain} (build it, or pass --flashtrain)")
    if not os.path.exists(args.config):
        sys.exit(f"run_suite: no config at {args.config}")
    return args


def run_all(args, runs, settings):
    """Runs the grid, --jobs at a time; returns each run's status in order."""
    now = time.monotonic()
    stop_at = now + args.deadline if args.deadline > 0 else None
    start_by = now + args.start_deadline if args.start_deadline > 0 else stop_at
    gpus = [g for g in args.gpus.split(",") if g] or [None]
    tokens = queue.Queue()  # one token per concurrent run, naming its GPU
    for i in range(args.jobs):
        tokens.put(gpus[i % len(gpus)])
    print_lock = threading.Lock()

    def job(index):
        gpu = tokens.get()
        try:
            status = execute(args, runs[index], settings[index], gpu, start_by, stop_at)
        finally:
            tokens.put(gpu)
        record = run_record(args.out, runs[index], status)
        score = record["scaled_accuracy"]
        fit = {None: "", True: "", False: " (not fitted)"}[record["fitted"]]
        with print_lock:
            print(f"{record['run']:48s} {'-' if score is None else f'{score:6.3f}'}{fit} "
                  f"step {record['steps_trained']}{' (target loss)' if record['stopped_early'] else ''}"
                  f" [{status}]", flush=True)
        return status

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        return list(pool.map(job, range(len(runs))))


def report(args, runs, statuses):
    """Writes suite.json, table.txt and the plots; returns the suite."""
    records = [run_record(args.out, run, status) for run, status in zip(runs, statuses)]
    suite = {"command": " ".join(sys.argv),
             "recipe": {"steps": args.steps, "steps_for": args.steps_for,
                        "target_loss": args.target_loss, "lrs": args.lrs, "seeds": args.seeds,
                        "row_lrs": args.row_lrs, "row_seeds": args.row_seeds,
                        "batch": BATCH,
                        "train_lengths": list(TRAIN_LENGTHS), "test_lengths": list(TEST_LENGTHS),
                        "long_lengths": list(LONG_LENGTHS), "bands": BANDS,
                        "validation_sequences": VALIDATION_BATCHES * BATCH,
                        "checkpoint_interval": args.checkpoint_interval,
                        "overrides": RECIPE, "description": RECIPE_TEXT, "extra": args.extra},
             "models": {m: MODEL_ROWS[m] for m in args.models},
             "solved_threshold": SOLVED, "fitted_threshold": FITTED, "selection": SELECTION,
             "published": {"sources": published.SOURCES,
                           "values": {t: published.VALUES[t] for t in args.tasks if t in published.VALUES}},
             "cells": summarize_cells(records, args.tasks, args.models),
             "runs": records}
    write_json(os.path.join(args.out, "suite.json"), suite)
    with open(os.path.join(args.out, "table.txt"), "w") as f:
        f.write(table_text(suite))
    sys.path.insert(0, HERE)
    import plot_suite
    try:
        written = plot_suite.draw(suite, args.out, [t for t in args.plot_tasks.split(",") if t])
        print("plots: " + ", ".join(written))
    except ImportError:
        print("no plots: needs matplotlib (python3 experiments/tasks/plot_suite.py suite.json)")
    return suite


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    os.makedirs(os.path.join(args.out, "runs"), exist_ok=True)
    runs = plan(args.tasks, args.models, args.lrs, args.seeds, args.steps, args.steps_for,
                args.row_lrs, args.row_seeds)
    config = os.path.relpath(args.config, REPO) if args.config.startswith(REPO) else args.config
    settings = [run_settings(run, run_overrides(run, args.target_loss, args.checkpoint_interval, args.extra),
                             config) for run in runs]
    conflicts = settings_conflicts(args.out, runs, settings)
    if conflicts:
        sys.exit(f"run_suite: {len(conflicts)} runs in {args.out} were started with other settings "
                 f"(run.json), e.g. {conflicts[0]}; use another --out for another recipe")
    if args.report_only:
        statuses = ["cached" if read_metrics(os.path.join(args.out, "runs", run_name(r), "metrics.jsonl"),
                                             r["steps"])["finished"] else "not run" for r in runs]
    else:
        statuses = run_all(args, runs, settings)
    suite = report(args, runs, statuses)
    print("\n" + table_text(suite))
    print(f"wrote {os.path.join(args.out, 'suite.json')} and table.txt")
    if args.pack:
        pack(args.out, runs, args.pack)
        print(f"packed {args.pack}")


if __name__ == "__main__":
    main()
